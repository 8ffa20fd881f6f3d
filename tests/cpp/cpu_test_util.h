// Helpers for CPU-runtime tests: compile with the optimising runtime into a per-test-binary
// cache, and compare its outputs with the reference interpreter's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "common/half.h"
#include "ir_test_builder.h"
#include "runtime/cpu/cpu_runtime.h"

namespace luminal::testing {

inline std::string test_cache_dir() {
  static const std::string dir = (std::filesystem::temp_directory_path() / "luminal-test-cache").string();
  return dir;
}

inline std::unique_ptr<runtime::Executable> compile_cpu(const ir::Graph& graph,
                                                        const std::map<std::string, runtime::BufferRef>& weights = {},
                                                        runtime::CompileOptions options = {}) {
  if (options.cache_dir.empty()) options.cache_dir = test_cache_dir();
  return runtime::cpu::CpuRuntime().compile(graph, weights, options);
}

// Random values of any dtype, in a range every op accepts (positive for floats where asked).
inline HostTensor random_tensor(DType dtype, std::vector<int64_t> sizes, std::mt19937& rng, bool positive = false,
                                std::vector<int64_t> strides = {}) {
  int64_t count = 1;
  if (strides.empty()) {
    for (int64_t s : sizes) count *= s;
  } else {
    count = 1;
    for (size_t d = 0; d < sizes.size(); ++d) count += (sizes[d] - 1) * strides[d];
  }
  std::uniform_real_distribution<double> real(positive ? 0.1 : -2.0, 2.0);
  std::uniform_int_distribution<int> small(positive ? 1 : -20, 20);
  HostTensor t = HostTensor::zeros(dtype, {count});
  t.sizes = sizes;
  t.strides = strides.empty() ? HostTensor::contiguous_strides(sizes) : strides;
  for (int64_t i = 0; i < count; ++i) {
    std::byte* at = t.bytes.data() + i * static_cast<int64_t>(ir::dtype_size(dtype));
    auto put = [&](auto v) { std::memcpy(at, &v, sizeof v); };
    switch (dtype) {
      case DType::F32: put(static_cast<float>(real(rng))); break;
      case DType::F64: put(real(rng)); break;
      case DType::F16: put(float_to_half(static_cast<float>(real(rng)))); break;
      case DType::BF16: put(float_to_bf16(static_cast<float>(real(rng)))); break;
      case DType::I8: put(static_cast<int8_t>(small(rng))); break;
      case DType::I16: put(static_cast<int16_t>(small(rng))); break;
      case DType::I32: put(static_cast<int32_t>(small(rng))); break;
      case DType::I64: put(static_cast<int64_t>(small(rng))); break;
      case DType::U8: put(static_cast<uint8_t>(std::abs(small(rng)))); break;
      case DType::Bool: put(static_cast<uint8_t>(rng() & 1)); break;
    }
  }
  return t;
}

inline double element_as_double(const HostTensor& t, size_t i) {
  const std::byte* at = t.bytes.data() + i * ir::dtype_size(t.dtype);
  auto get = [&](auto v) {
    std::memcpy(&v, at, sizeof v);
    return v;
  };
  switch (t.dtype) {
    case DType::F32: return get(float{});
    case DType::F64: return get(double{});
    case DType::F16: return half_to_float(get(uint16_t{}));
    case DType::BF16: return bf16_to_float(get(uint16_t{}));
    case DType::I8: return get(int8_t{});
    case DType::I16: return get(int16_t{});
    case DType::I32: return get(int32_t{});
    case DType::I64: return static_cast<double>(get(int64_t{}));
    case DType::U8:
    case DType::Bool: return get(uint8_t{});
  }
  return 0;
}

// Floats within a relative tolerance (NaN matches NaN); integers and bools exactly.
inline void expect_same(const HostTensor& actual, const HostTensor& expected, double tolerance,
                        const std::string& what) {
  ASSERT_EQ(actual.sizes, expected.sizes) << what;
  ASSERT_EQ(actual.dtype, expected.dtype) << what;
  const size_t count = actual.bytes.size() / ir::dtype_size(actual.dtype);
  const double tol = ir::is_floating(actual.dtype) ? tolerance : 0.0;
  int reported = 0;
  for (size_t i = 0; i < count; ++i) {
    const double a = element_as_double(actual, i);
    const double e = element_as_double(expected, i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (a == e) continue;
    if (std::fabs(a - e) <= tol * std::max(1.0, std::fabs(e))) continue;
    ADD_FAILURE() << what << ": element " << i << " is " << a << ", reference " << e;
    if (++reported > 5) return;
  }
}

inline double default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.6e-2;
    case DType::F32: return 2e-5;
    default: return 1e-12;
  }
}

// Runs `graph` on both runtimes and compares every output.
inline void expect_matches_reference(const ir::Graph& graph, std::vector<HostTensor> inputs, const std::string& what,
                                     double tolerance = -1, const std::map<std::string, runtime::BufferRef>& weights = {}) {
  std::vector<HostTensor> reference_inputs = inputs;
  const auto expected = run_executable(*compile_reference(graph, weights), graph, reference_inputs);
  const auto actual = run_executable(*compile_cpu(graph, weights), graph, inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k)
    expect_same(actual[k], expected[k], tolerance >= 0 ? tolerance : default_tolerance(expected[k].dtype),
                what + " output " + std::to_string(k));
}

// Kernels with an AVX-512 form (lm_tile_strips) match the reference in both forms. With
// `same_bits`, the two forms also agree bit for bit: the tiles sum each output in the same order
// (not so for a kernel whose vectorised reductions or libm calls change with the vector width).
// On a machine without AVX-512 both builds are the AVX2 one.
inline void expect_both_isas_match_the_reference(const ir::Graph& graph, const std::vector<HostTensor>& inputs,
                                                 const std::string& what, double tolerance,
                                                 const std::map<std::string, runtime::BufferRef>& weights = {},
                                                 bool same_bits = true) {
  std::vector<HostTensor> reference_inputs = inputs;
  const auto expected = run_executable(*compile_reference(graph, weights), graph, reference_inputs);
  std::vector<std::vector<HostTensor>> results;
  for (const std::string isa : {"native", "avx2"}) {
    runtime::CompileOptions options;
    options.cpu_isa = isa;
    std::vector<HostTensor> cpu_inputs = inputs;
    results.push_back(run_executable(*compile_cpu(graph, weights, options), graph, cpu_inputs));
    ASSERT_EQ(results.back().size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k)
      expect_same(results.back()[k], expected[k], tolerance, what + " (" + isa + ") output " + std::to_string(k));
  }
  for (size_t k = 0; same_bits && k < expected.size(); ++k)
    EXPECT_TRUE(results[0][k].bytes == results[1][k].bytes) << what << ": AVX-512 and AVX2 kernels differ, output " << k;
}

}  // namespace luminal::testing
