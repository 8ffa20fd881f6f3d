// The ATen fallback's seam, without torch: both runtimes hand an AtenCall node to the registered
// executor with its inputs as strided views of their producers (no copy), the call's symbol
// bindings and a contiguous output; with no executor registered the run raises UnsupportedError.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include "codegen/kernel.h"
#include "common/error.h"
#include "cpu_test_util.h"
#include "runtime/aten_fallback.h"
#include "runtime/cpu/jit.h"

namespace luminal::testing {
namespace {

using ir::Expr;

// Stands in for the c10 dispatcher: out[i, j] = 10 * in[i, j] + s0, read through the strides it
// is given, and records what it saw.
class FakeExecutor final : public runtime::AtenCallExecutor {
 public:
  mutable std::vector<int64_t> seen_strides;
  mutable int calls = 0;

  void run(const ir::AtenCall& call, const std::vector<runtime::BufferRef>& inputs, const ir::SymbolBindings& bindings,
           const runtime::BufferRef& output) const override {
    ++calls;
    EXPECT_EQ(call.full_name(), "aten::fake.default");
    const runtime::BufferRef& in = inputs.at(0);
    seen_strides = in.strides;
    const int64_t s0 = bindings.at("s0");
    const auto* src = static_cast<const float*>(in.data);
    auto* dst = static_cast<float*>(output.data);
    for (int64_t i = 0; i < output.sizes[0]; ++i)
      for (int64_t j = 0; j < output.sizes[1]; ++j)
        dst[i * output.strides[0] + j * output.strides[1]] =
            10 * src[i * in.strides[0] + j * in.strides[1]] + static_cast<float>(s0);
  }
  bool has_native_half_matmul(ir::DType) const override { return false; }
  bool parallel_for(int64_t items, int, int64_t, Task task, void* context) const override {
    task(context, 0, items);
    return true;
  }
};

// x [s0, 3] -> fake(x.t() + 1) [3, s0] -> * 2
ir::Graph fallback_graph() {
  IrTestBuilder b;
  const ir::Shape shape{Expr::symbol("s0"), Expr(int64_t{3})};
  TensorRef x = b.input("x", DType::F32, shape);
  TensorRef y = b.binary(Op::Add, x, b.constant(1.0, DType::F32, shape));
  ir::Node call = IrTestBuilder::make(Op::AtenCall, DType::F32, {Expr(int64_t{3}), Expr::symbol("s0")},
                                      {viewed(y, y.view.permute({1, 0}))});
  auto spec = std::make_shared<ir::AtenCall>();
  spec->op = "aten::fake";
  spec->overload = "default";
  call.aten_call = spec;
  TensorRef z = b.add(call);
  const ir::Shape out_shape{Expr(int64_t{3}), Expr::symbol("s0")};
  b.output(b.binary(Op::Mul, z, b.constant(2.0, DType::F32, out_shape)));
  return b.graph;
}

std::vector<float> expected_for(const std::vector<float>& x, int64_t rows) {
  std::vector<float> out(static_cast<size_t>(3 * rows));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < 3; ++j) out[j * rows + i] = 2 * (10 * (x[i * 3 + j] + 1) + static_cast<float>(rows));
  return out;
}

class AtenCallSeam : public ::testing::TestWithParam<bool> {
 protected:
  void TearDown() override { runtime::set_aten_call_executor(nullptr); }
  std::unique_ptr<runtime::Executable> compile(const ir::Graph& graph) {
    return GetParam() ? compile_cpu(graph) : compile_reference(graph);
  }
};

TEST_P(AtenCallSeam, ExecutorGetsStridedViewBindingsAndWritesTheNode) {
  FakeExecutor executor;
  runtime::set_aten_call_executor(&executor);
  const ir::Graph graph = fallback_graph();
  auto executable = compile(graph);
  for (int64_t rows : {2, 5}) {
    std::vector<float> x;
    for (int64_t i = 0; i < rows * 3; ++i) x.push_back(static_cast<float>(i) * 0.5f - 1);
    std::vector<HostTensor> inputs{HostTensor::of<float>(DType::F32, {rows, 3}, x)};
    const std::vector<HostTensor> out = run_executable(*executable, graph, inputs);
    EXPECT_EQ(out[0].values<float>(), expected_for(x, rows)) << "rows " << rows;
    // The transposed view reaches the executor as strides, not as a copy.
    EXPECT_EQ(executor.seen_strides, (std::vector<int64_t>{1, 3}));
  }
  EXPECT_EQ(executor.calls, 2);
}

TEST_P(AtenCallSeam, NoExecutorIsUnsupportedNotACrash) {
  runtime::set_aten_call_executor(nullptr);
  const ir::Graph graph = fallback_graph();
  auto executable = compile(graph);
  std::vector<HostTensor> inputs{HostTensor::of<float>(DType::F32, {2, 3}, std::vector<float>(6, 1.0f))};
  try {
    run_executable(*executable, graph, inputs);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("aten::fake.default runs through the ATen fallback, which needs"),
              std::string::npos)
        << e.what();
  }
}

// Stands in for ATen's matmul on a CPU with bf16 dot products: 2-D products of half inputs,
// accumulated in float and rounded once, read through the strides it is given.
class HalfMatmulExecutor final : public runtime::AtenCallExecutor {
 public:
  mutable std::vector<DType> seen_dtypes;
  mutable int parallel_fors = 0;

  // matmul.out: inputs are self, other and out (the output buffer itself).
  void run(const ir::AtenCall& call, const std::vector<runtime::BufferRef>& inputs, const ir::SymbolBindings&,
           const runtime::BufferRef& output) const override {
    EXPECT_EQ(call.full_name(), "aten::matmul.out");
    EXPECT_EQ(inputs.at(2).data, output.data);
    const runtime::BufferRef& a = inputs.at(0);
    const runtime::BufferRef& b = inputs.at(1);
    seen_dtypes.push_back(a.dtype);
    const auto read = [](const runtime::BufferRef& t, int64_t i, int64_t j) {
      const uint16_t bits = static_cast<const uint16_t*>(t.data)[i * t.strides[0] + j * t.strides[1]];
      return t.dtype == DType::BF16 ? bf16_to_float(bits) : half_to_float(bits);
    };
    auto* out = static_cast<uint16_t*>(output.data);
    for (int64_t i = 0; i < output.sizes[0]; ++i)
      for (int64_t j = 0; j < output.sizes[1]; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < a.sizes[1]; ++k) sum += read(a, i, k) * read(b, k, j);
        out[i * output.sizes[1] + j] = output.dtype == DType::BF16 ? float_to_bf16(sum) : float_to_half(sum);
      }
  }
  bool has_native_half_matmul(DType dtype) const override { return dtype == DType::BF16; }
  bool parallel_for(int64_t items, int, int64_t, Task task, void* context) const override {
    ++parallel_fors;
    task(context, 0, items / 2);
    task(context, items / 2, items);
    return true;
  }
};

// x [rows, 8] @ w.t(), w [3, 8]: a Linear's prefill GEMM, of more rows than the cpu runtime's
// GEMV kernels take (f32: up to kF32GemvRows; bf16 pairs, where the CPU has AVX512-BF16: up to
// kBf16PairGemvRows).
constexpr int64_t kGemmRows = std::max(codegen::kF32GemvRows, codegen::kBf16PairGemvRows) + 1;
ir::Graph half_linear(DType dtype) {
  IrTestBuilder b;
  TensorRef x = b.input("x", dtype, {Expr(kGemmRows), Expr(int64_t{8})});
  TensorRef w = b.input("w", dtype, {Expr(int64_t{3}), Expr(int64_t{8})});
  b.output(b.matmul(x, viewed(w, w.view.permute({1, 0}))));
  return b.graph;
}

class HalfMatmul : public ::testing::Test {
 protected:
  void TearDown() override { runtime::set_aten_call_executor(nullptr); }
};

TEST_F(HalfMatmul, StaysInItsDtypeWhereAtenComputesItNatively) {
  HalfMatmulExecutor executor;
  runtime::set_aten_call_executor(&executor);
  std::mt19937 rng(7);
  for (DType dtype : {DType::BF16, DType::F16}) {
    executor.seen_dtypes.clear();
    const ir::Graph graph = half_linear(dtype);
    expect_matches_reference(graph, {random_tensor(dtype, {kGemmRows, 8}, rng), random_tensor(dtype, {3, 8}, rng)},
                             ir::dtype_name(dtype));
    // bf16 reaches the executor unwidened and once; f16, which this CPU lacks, is widened to f32
    // for BLAS and never reaches it.
    EXPECT_EQ(executor.seen_dtypes, dtype == DType::BF16 ? std::vector<DType>{DType::BF16} : std::vector<DType>{})
        << ir::dtype_name(dtype);
  }
}

// A mixture of experts' grouped matmul in bf16 multiplies each group with rows through ATen, on
// the expert's weight in place (a Linear-style transposed view): empty groups, rows in no group,
// ranges that do not ascend and ends outside [0, S] as in GroupedMatmulMatchesTheReference.
TEST_F(HalfMatmul, GroupedMatmulRunsEachGroupWithRowsThroughAten) {
  // Where the kernels multiply bf16 pairs (AVX512-BF16, or AMX tiles), only groups of more than
  // kBf16PairGemvRows rows: the others are the expert GEMV.
  HalfMatmulExecutor executor;
  runtime::set_aten_call_executor(&executor);
  std::mt19937 rng(11);
  const bool pairs = runtime::cpu::kernels_multiply_bf16_pairs(runtime::cpu::CpuIsa::Native);
  struct Routing {
    std::vector<int64_t> ends;
    int64_t rows;
    size_t groups_with_rows, groups_past_pair_rows;
  };
  // The last: a first group of six rows past the expert GEMV's, then groups of 0, 5 and 5.
  constexpr int64_t kPast = codegen::kBf16PairGemvRows + 6;
  const std::vector<Routing> routings = {{{3, 3, 8, 10}, 10, 3, 0},
                                         {{2, 5, 6, 6}, 10, 3, 0},
                                         {{6, 2, 9, 10}, 10, 3, 0},
                                         {{-3, 4, 20, 20}, 10, 2, 0},
                                         {{0, 0, 0, 0}, 10, 0, 0},
                                         {{kPast, kPast, kPast + 5, kPast + 10}, kPast + 10, 3, 1}};
  for (DType dtype : {DType::BF16, DType::F16}) {
    IrTestBuilder b;
    auto a = b.input("a", dtype, {Expr::symbol("s0"), 12});
    auto w_linear = b.input("w_linear", dtype, {4, 7, 12});
    auto offs = b.input("offs", DType::I64, {4});
    b.output(b.grouped_matmul(a, viewed(w_linear, w_linear.view.permute({0, 2, 1})), offs));
    for (const Routing& routing : routings) {
      executor.seen_dtypes.clear();
      const std::vector<int64_t>& ends = routing.ends;
      const std::string what = std::string(ir::dtype_name(dtype)) + " grouped matmul, offs " + std::to_string(ends[0]) +
                                "," + std::to_string(ends[1]) + "," + std::to_string(ends[2]);
      expect_matches_reference(b.graph,
                               {random_tensor(dtype, {routing.rows, 12}, rng), random_tensor(dtype, {4, 7, 12}, rng),
                                HostTensor::of<int64_t>(DType::I64, {4}, ends)},
                               what);
      // f16, which this CPU lacks, widens to f32 for BLAS and never reaches the executor.
      const size_t through_aten = pairs ? routing.groups_past_pair_rows : routing.groups_with_rows;
      EXPECT_EQ(executor.seen_dtypes.size(), dtype == DType::BF16 ? through_aten : 0) << what;
    }
  }
}

// With an ATen executor that can split work, every kernel split across threads runs on ATen's
// threads (torch's OpenMP team), after an ATen matmul or long after one, and never on a pool of
// our own beside them: two pools on the same cores each spin while the other needs them.
TEST_F(HalfMatmul, KernelsSplitAcrossAtensThreads) {
  HalfMatmulExecutor executor;
  runtime::set_aten_call_executor(&executor);
  IrTestBuilder b;
  TensorRef x = b.input("x", DType::BF16, {Expr(kGemmRows), Expr(int64_t{8})});
  TensorRef w = b.input("w", DType::BF16, {Expr(int64_t{1024}), Expr(int64_t{8})});
  b.output(b.unary(Op::Exp, b.matmul(x, viewed(w, w.view.permute({1, 0})))));
  std::mt19937 rng(9);
  expect_matches_reference(b.graph, {random_tensor(DType::BF16, {kGemmRows, 8}, rng), random_tensor(DType::BF16, {1024, 8}, rng)},
                           "matmul then exp");
  EXPECT_EQ(executor.seen_dtypes.size(), 1u);
  EXPECT_EQ(executor.parallel_fors, 1) << "the exp over 65x1024 elements, split across ATen's threads";

  IrTestBuilder alone;
  alone.output(alone.unary(Op::Exp, alone.input("y", DType::F32, {Expr(int64_t{64}), Expr(int64_t{1024})})));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long after the matmul
  expect_matches_reference(alone.graph, {random_tensor(DType::F32, {64, 1024}, rng)}, "exp alone");
  EXPECT_EQ(executor.parallel_fors, 2) << "no ATen call before it: ATen's threads still";
}

INSTANTIATE_TEST_SUITE_P(Runtimes, AtenCallSeam, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "cpu" : "reference"; });

}  // namespace
}  // namespace luminal::testing
