// The optimising CPU runtime against the reference interpreter: every primitive over every
// dtype it is defined on, strided and broadcast views, odd sizes that defeat vector widths,
// symbolic shapes, errors, and the kernel cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "cpu_test_util.h"

namespace luminal::testing {
namespace {

using ir::Expr;
using ir::View;

const std::vector<DType> kAllDtypes = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                       DType::I16, DType::I32, DType::I64,  DType::U8,  DType::Bool};

bool defined_on(Op op, DType t) {
  const bool fl = ir::is_floating(t);
  switch (op) {
    case Op::Recip: case Op::Sqrt: case Op::Exp: case Op::Log: case Op::Sin: case Op::Cos: case Op::Tanh:
    case Op::Erf: case Op::Sigmoid: return fl;
    case Op::Not: case Op::And: case Op::Or: case Op::Xor: return !fl;
    case Op::Neg: case Op::Abs: case Op::Pow: return t != DType::Bool;
    default: return true;
  }
}

bool needs_positive(Op op) { return op == Op::Log || op == Op::Sqrt || op == Op::Pow || op == Op::Div || op == Op::Mod; }

TEST(CpuRuntime, UnaryOpsAllDtypes) {
  const std::vector<Op> ops = {Op::Copy, Op::Neg, Op::Abs, Op::Recip, Op::Sqrt, Op::Exp, Op::Log, Op::Sin,
                               Op::Cos, Op::Tanh, Op::Erf, Op::Sigmoid, Op::Floor, Op::Ceil, Op::Round,
                               Op::Trunc, Op::Not, Op::IsNan};
  std::mt19937 rng(1);
  for (DType t : kAllDtypes) {
    IrTestBuilder b;
    auto x = b.input("x", t, {3, 37});
    int outputs = 0;
    for (Op op : ops) {
      if (!defined_on(op, t)) continue;
      b.output(b.unary(op, x, op == Op::IsNan ? std::optional<DType>(DType::Bool) : std::nullopt));
      ++outputs;
    }
    // Unfused too: each op alone, so one kernel per node is also covered.
    expect_matches_reference(b.graph, {random_tensor(t, {3, 37}, rng, true)}, std::string("unary ") + ir::dtype_name(t),
                             t == DType::F32 ? 4e-6 : -1);
  }
}

TEST(CpuRuntime, BinaryOpsAllDtypes) {
  const std::vector<Op> ops = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Mod, Op::Max, Op::Min, Op::Pow,
                               Op::Lt, Op::Le, Op::Eq, Op::Ne, Op::And, Op::Or, Op::Xor};
  std::mt19937 rng(2);
  for (DType t : kAllDtypes) {
    for (Op op : ops) {
      if (!defined_on(op, t)) continue;
      if ((op == Op::Div || op == Op::Mod) && t == DType::Bool) continue;
      IrTestBuilder b;
      auto x = b.input("x", t, {5, 19});
      auto y = b.input("y", t, {5, 19});
      b.output(b.binary(op, x, y));
      const bool pos = needs_positive(op);
      expect_matches_reference(b.graph, {random_tensor(t, {5, 19}, rng, pos), random_tensor(t, {5, 19}, rng, pos)},
                               std::string(ir::op_name(op)) + " " + ir::dtype_name(t),
                               op == Op::Pow && t == DType::F32 ? 1e-5 : -1);
    }
  }
}

TEST(CpuRuntime, CastsBetweenAllDtypes) {
  std::mt19937 rng(3);
  for (DType from : kAllDtypes) {
    IrTestBuilder b;
    auto x = b.input("x", from, {2, 21});
    for (DType to : kAllDtypes) b.output(b.unary(Op::Cast, x, to));
    expect_matches_reference(b.graph, {random_tensor(from, {2, 21}, rng)}, std::string("cast from ") + ir::dtype_name(from));
  }
}

// Values that probe rounding to a 16-bit float format: every `step`-th finite positive bit
// pattern below `finite_end` widened by `widen`, the midpoint to its neighbour (a tie) and one
// f32 ulp either side of it, then `edges`; each value with both signs.
std::vector<float> rounding_probes(float (*widen)(uint16_t), uint32_t finite_end, uint32_t step,
                                   std::initializer_list<float> edges) {
  std::vector<float> values;
  const auto both_signs = [&](float v) {
    values.push_back(v);
    values.push_back(-v);
  };
  for (uint32_t h = 0; h < finite_end; h += step) {
    const float lo = widen(static_cast<uint16_t>(h));
    const float hi = widen(static_cast<uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;
    for (float v : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) both_signs(v);
  }
  for (float v : edges) both_signs(v);
  return values;
}

TEST(CpuRuntime, EveryHalfWidensToTheReferenceBits) {
  // Generated kernels widen f16 without branches (so the loops vectorise); every one of the 65536
  // bit patterns must give half_to_float's bits, signed zeros and subnormals included.
  IrTestBuilder b;
  auto x = b.input("x", DType::F16, {256, 256});
  b.output(b.unary(Op::Cast, x, DType::F32));
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<HostTensor> inputs = {HostTensor::of(DType::F16, {256, 256}, all)};
  const auto out = run_executable(*compile_cpu(b.graph, {}), b.graph, inputs);
  ASSERT_EQ(out.size(), 1u);
  int reported = 0;
  for (size_t i = 0; i < all.size() && reported < 5; ++i) {
    const float expected = half_to_float(all[i]);
    float actual;
    std::memcpy(&actual, out[0].bytes.data() + i * sizeof(float), sizeof actual);
    if (std::isnan(expected) && std::isnan(actual)) continue;
    if (std::memcmp(&expected, &actual, sizeof actual) != 0) {
      ADD_FAILURE() << "half 0x" << std::hex << all[i] << " widened to " << actual << ", expected " << expected;
      ++reported;
    }
  }
}

TEST(CpuRuntime, NarrowingToHalfRoundsAsTheReference) {
  // Generated kernels narrow f32 to f16 without branches. Every half value, the midpoints between
  // neighbours (ties to even) and one f32 ulp either side of each midpoint, signed, with the
  // overflow and subnormal edges among them, must give float_to_half's bits.
  const std::vector<float> values =
      rounding_probes(half_to_float, 0x7c00u, 1, {65519.99f, 65520.0f, 1e10f, INFINITY, NAN, 1e-10f, 0.0f});
  const int64_t n = static_cast<int64_t>(values.size());
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {n});
  b.output(b.unary(Op::Cast, x, DType::F16));
  std::vector<HostTensor> inputs = {HostTensor::of(DType::F32, {n}, values)};
  const auto out = run_executable(*compile_cpu(b.graph, {}), b.graph, inputs);
  ASSERT_EQ(out.size(), 1u);
  int reported = 0;
  for (size_t i = 0; i < values.size() && reported < 5; ++i) {
    uint16_t actual;
    std::memcpy(&actual, out[0].bytes.data() + i * sizeof actual, sizeof actual);
    const uint16_t expected = float_to_half(values[i]);
    if (actual != expected) {
      ADD_FAILURE() << values[i] << " narrowed to 0x" << std::hex << actual << ", expected 0x" << expected;
      ++reported;
    }
  }
}

TEST(CpuRuntime, BfloatRoundingBetweenOpsMatchesTheReference) {
  // A bf16 value fused kernels pass between ops is rounded in 32-bit lanes (lm_rbf), not narrowed
  // and widened, and a stored one is narrowed (lm_f2bf): every bf16 value, the midpoints between
  // neighbours (ties to even) and one f32 ulp either side, signed, with infinities, NaNs of every
  // payload edge (quiet, signalling, all-ones, negative) and the overflow edge, must round as the
  // reference's float_to_bf16 does.
  std::vector<float> values =
      rounding_probes(bf16_to_float, 0x7f80u, 7, {3.3961776e38f, 3.4028235e38f, INFINITY, NAN, 1e-40f, 0.0f});
  for (uint32_t nan_bits : {0x7fffffffu, 0xffffffffu, 0x7f800001u, 0x7fbfffffu, 0xff808000u, 0x7fff8000u}) {
    float nan;
    std::memcpy(&nan, &nan_bits, sizeof nan);
    values.push_back(nan);
  }
  const int64_t n = static_cast<int64_t>(values.size());
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {n});
  b.output(b.unary(Op::Cast, b.unary(Op::Cast, x, DType::BF16), DType::F32));
  b.output(b.unary(Op::Cast, x, DType::BF16));
  std::vector<HostTensor> inputs = {HostTensor::of(DType::F32, {n}, values)};
  const auto out = run_executable(*compile_cpu(b.graph, {}), b.graph, inputs);
  ASSERT_EQ(out.size(), 2u);
  int reported = 0;
  for (size_t i = 0; i < values.size() && reported < 5; ++i) {
    float actual;
    std::memcpy(&actual, out[0].bytes.data() + i * sizeof actual, sizeof actual);
    uint16_t stored;
    std::memcpy(&stored, out[1].bytes.data() + i * sizeof stored, sizeof stored);
    const uint16_t expected_bits = float_to_bf16(values[i]);
    const float expected = bf16_to_float(expected_bits);
    if (std::memcmp(&expected, &actual, sizeof actual) != 0 || stored != expected_bits) {
      ADD_FAILURE() << values[i] << " rounded to " << actual << " and stored as " << stored << ", expected "
                    << expected << " (" << expected_bits << ")";
      ++reported;
    }
  }
}

TEST(CpuRuntime, WhereConstantIota) {
  std::mt19937 rng(4);
  for (DType t : kAllDtypes) {
    IrTestBuilder b;
    auto c = b.input("c", DType::Bool, {4, 9});
    auto x = b.input("x", t, {4, 9});
    b.output(b.where(c, x, b.constant(ir::Scalar::of_int(3), t, {4, 9})));
    b.output(b.iota(1, t, {4, 9}));
    b.output(b.constant(1.5, t, {4, 9}));
    expect_matches_reference(b.graph, {random_tensor(DType::Bool, {4, 9}, rng), random_tensor(t, {4, 9}, rng)},
                             std::string("where/iota/constant ") + ir::dtype_name(t));
  }
}

TEST(CpuRuntime, ReductionsAllDtypesAndAxes) {
  std::mt19937 rng(5);
  for (DType t : kAllDtypes) {
    for (Op op : {Op::SumReduce, Op::MaxReduce, Op::MinReduce, Op::ProdReduce}) {
      for (int axis = 0; axis < 3; ++axis) {
        IrTestBuilder b;
        auto x = b.input("x", t, {3, 17, 5});
        b.output(b.reduce(op, x, axis));
        const double tol = op == Op::ProdReduce && t == DType::BF16 ? 5e-2 : -1;
        expect_matches_reference(b.graph, {random_tensor(t, {3, 17, 5}, rng, op == Op::ProdReduce)},
                                 std::string(ir::op_name(op)) + " " + ir::dtype_name(t) + " axis " + std::to_string(axis), tol);
      }
    }
  }
}

// Runs `graph` on both runtimes and requires every output's bytes to be equal.
void expect_same_bits(const ir::Graph& graph, std::vector<HostTensor> inputs, const std::string& what) {
  std::vector<HostTensor> reference_inputs = inputs;
  const auto expected = run_executable(*compile_reference(graph), graph, reference_inputs);
  const auto actual = run_executable(*compile_cpu(graph), graph, inputs);
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].sizes, expected[k].sizes) << what;
    if (actual[k].bytes == expected[k].bytes) continue;
    ADD_FAILURE() << what << " output " << k << " differs from the reference in its bits";
    expect_same(actual[k], expected[k], 0, what);  // names the first elements that differ
  }
}

// The generated scan adds in the reference's accumulator (ir::scan_accumulator) in the same
// order, so it matches bit for bit in every dtype, floats included. 7 x 13 x 5 defeats every
// vector width; i8 and u8 sums wrap.
TEST(CpuRuntime, CumSumAllDtypesAndAxesBitExact) {
  std::mt19937 rng(22);
  for (DType t : kAllDtypes) {
    for (int axis = 0; axis < 3; ++axis) {
      IrTestBuilder b;
      auto x = b.input("x", t, {7, 13, 5});
      // torch's cumsum of bool is an i64 cumsum of it (CumSum is not defined on bool).
      b.output(b.cumsum(t == DType::Bool ? b.unary(Op::Cast, x, DType::I64) : x, axis));
      expect_same_bits(b.graph, {random_tensor(t, {7, 13, 5}, rng)},
                       std::string("cumsum ") + ir::dtype_name(t) + " axis " + std::to_string(axis));
    }
  }
}

// Rows long enough that a narrower accumulator would round differently: f32 must add in
// double and f16/bf16 in float, as the reference (pinned against eager's values) does.
TEST(CpuRuntime, CumSumLongRowsKeepTheReferenceAccumulator) {
  std::mt19937 rng(23);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    IrTestBuilder b;
    b.output(b.cumsum(b.input("x", t, {3, 1000}), 1));
    expect_same_bits(b.graph, {random_tensor(t, {3, 1000}, rng)}, std::string("long cumsum ") + ir::dtype_name(t));
  }
  // The reference's hand-checked cases: in f32 a float sum would lose the ones, and in f16 a
  // double sum would keep the 2^-14s.
  std::vector<float> ones_after_1e8(17, 1.0f);
  ones_after_1e8[0] = 1e8f;
  IrTestBuilder b;
  b.output(b.cumsum(b.input("x", DType::F32, {17}), 0));
  expect_same_bits(b.graph, {HostTensor::of<float>(DType::F32, {17}, ones_after_1e8)}, "ones after 1e8");
  std::vector<uint16_t> tiny_after_2048(16401, float_to_half(1.0f / 16384));
  tiny_after_2048[0] = float_to_half(2048);
  IrTestBuilder h;
  h.output(h.cumsum(h.input("x", DType::F16, {16401}), 0));
  expect_same_bits(h.graph, {HostTensor::of<uint16_t>(DType::F16, {16401}, tiny_after_2048)}, "2^-14s after 2048");
}

TEST(CpuRuntime, CumSumThroughNonContiguousViews) {
  std::mt19937 rng(24);
  for (DType t : {DType::F32, DType::I64}) {
    for (int axis = 0; axis < 2; ++axis) {
      IrTestBuilder b;
      auto x = b.input("x", t, {7, 26});
      // Every other column from the second, transposed: [13, 7] with strides [2, 26], offset 1.
      auto strided = viewed(x, x.view.slice(1, 1, 26, 2).permute({1, 0}));
      b.output(b.cumsum(strided, axis));
      auto y = b.input("y", t, {4, 6});
      b.output(b.cumsum(y, axis));  // a caller's column-major input
      expect_same_bits(b.graph, {random_tensor(t, {7, 26}, rng), random_tensor(t, {4, 6}, rng, false, {1, 4})},
                       std::string("strided cumsum ") + ir::dtype_name(t) + " axis " + std::to_string(axis));
    }
  }
}

TEST(CpuRuntime, CumSumOverEmptyAxisOrNoRows) {
  std::mt19937 rng(25);
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{0, 5}, std::vector<int64_t>{4, 0}}) {
    for (int axis = 0; axis < 2; ++axis) {
      IrTestBuilder b;
      b.output(b.cumsum(b.input("x", DType::F32, ir::Shape(sizes.begin(), sizes.end())), axis));
      expect_same_bits(b.graph, {random_tensor(DType::F32, sizes, rng)},
                       "empty cumsum [" + std::to_string(sizes[0]) + ", " + std::to_string(sizes[1]) + "] axis " +
                           std::to_string(axis));
    }
  }
}

// A symbolic length along the axis and a symbolic row count: one compile serves every size.
TEST(CpuRuntime, CumSumSymbolicShapesOneCompile) {
  std::mt19937 rng(26);
  const Expr s = Expr::symbol("s0");
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {3, s});
  b.output(b.cumsum(x, 1));
  b.output(b.cumsum(x, 0));
  auto cpu = compile_cpu(b.graph);
  auto reference = compile_reference(b.graph);
  for (int64_t n : {1, 7, 64, 1000}) {
    std::vector<HostTensor> inputs = {random_tensor(DType::F32, {3, n}, rng)};
    std::vector<HostTensor> reference_inputs = inputs;
    const auto actual = run_executable(*cpu, b.graph, inputs);
    const auto expected = run_executable(*reference, b.graph, reference_inputs);
    for (size_t k = 0; k < actual.size(); ++k)
      EXPECT_TRUE(actual[k].bytes == expected[k].bytes) << "symbolic cumsum n=" << n << " output " << k;
  }
}

TEST(CpuRuntime, NonContiguousViewsAndOddSizes) {
  std::mt19937 rng(6);
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {7, 13});
  auto y = b.input("y", DType::F32, {13});
  // x^T + broadcast(y) as a column, sliced with step 2.
  auto xt = viewed(x, x.view.permute({1, 0}));
  auto yb = viewed(y, y.view.unsqueeze(1).expand({13, 7}));
  auto sum = b.binary(Op::Add, xt, yb);
  auto sliced = viewed(sum, sum.view.slice(1, 1, 7, 2));
  b.output(b.unary(Op::Exp, sliced));
  b.output(sliced);  // an output through a view
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {7, 13}, rng), random_tensor(DType::F32, {13}, rng)},
                           "views", 4e-6);
}

TEST(CpuRuntime, StridedCallerInputs) {
  std::mt19937 rng(7);
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 6});
  b.output(b.unary(Op::Neg, x));
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {4, 6}, rng, false, {1, 4})}, "strided input");
}

// A weight rebound from a contiguous buffer to a transposed one (and back) is read through its
// strides: the runtime keeps whether each bound weight is dense from its binding.
TEST(CpuRuntime, AWeightReboundToOtherStridesIsReadThroughThem) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, 2});
  b.output(b.binary(Op::Sub, x, b.weight("w", DType::F32, {2, 2})));
  HostTensor dense = HostTensor::of<float>(DType::F32, {2, 2}, {1, 2, 3, 4});
  HostTensor transposed = HostTensor::of<float>(DType::F32, {2, 2}, {1, 2, 3, 4}, {1, 2});  // [[1 3] [2 4]]
  auto executable = compile_cpu(b.graph, {{"w", dense.ref()}});
  std::vector<HostTensor> inputs = {HostTensor::of<float>(DType::F32, {2, 2}, {0, 0, 0, 0})};
  EXPECT_EQ(run_executable(*executable, b.graph, inputs)[0].values<float>(), (std::vector<float>{-1, -2, -3, -4}));
  executable->rebind_weight("w", transposed.ref());
  EXPECT_EQ(run_executable(*executable, b.graph, inputs)[0].values<float>(), (std::vector<float>{-1, -3, -2, -4}));
  executable->rebind_weight("w", dense.ref());
  EXPECT_EQ(run_executable(*executable, b.graph, inputs)[0].values<float>(), (std::vector<float>{-1, -2, -3, -4}));
}

TEST(CpuRuntime, MatmulAllPaths) {
  std::mt19937 rng(8);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::I8}) {
    for (int64_t m : {1, 5}) {
      IrTestBuilder b;
      auto a = b.input("a", t, {2, m, 33});
      auto w = b.input("w", t, {17, 33});
      // a @ w^T with w broadcast over the batch: the Linear layout (GEMV when m == 1).
      auto wt = viewed(w, w.view.permute({1, 0}).unsqueeze(0).expand({2, 33, 17}));
      b.output(b.matmul(a, wt));
      auto c = b.input("c", t, {2, 33, 3});
      b.output(b.matmul(a, c));
      expect_matches_reference(b.graph,
                               {random_tensor(t, {2, m, 33}, rng), random_tensor(t, {17, 33}, rng),
                                random_tensor(t, {2, 33, 3}, rng)},
                               std::string("matmul ") + ir::dtype_name(t) + " m=" + std::to_string(m),
                               t == DType::F32 ? 1e-5 : (t == DType::F16 ? 5e-3 : -1));
    }
  }
}

TEST(CpuRuntime, GroupedMatmulMatchesTheReference) {
  // Symbolic rows (a prefill), a Linear-style transposed weight and a plain one, a column view of
  // the rows, and offs with empty groups, rows past the last group, ranges that do not ascend
  // and ends outside [0, S]; a consumer fused after it. The last routing's first expert has more
  // rows than the expert GEMV takes (kF32GemvRows, kBf16PairGemvRows): BLAS, with no ATen here.
  std::mt19937 rng(21);
  const Expr s = Expr::symbol("s0");
  const std::vector<std::vector<int64_t>> routings = {
      {3, 3, 8, 10}, {2, 5, 6, 6}, {6, 2, 9, 10}, {-3, 4, 20, 20}, {0, 0, 0, 0}, {10, 10, 10, 10}, {70, 70, 75, 80}};
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    IrTestBuilder b;
    auto a = b.input("a", t, {s, 12});
    auto a_columns = b.input("a_columns", t, {12, s});
    auto w = b.input("w", t, {4, 12, 7});
    auto w_linear = b.input("w_linear", t, {4, 7, 12});
    auto offs = b.input("offs", DType::I64, {4});
    b.output(b.unary(Op::Neg, b.grouped_matmul(a, w, offs)));
    b.output(b.grouped_matmul(viewed(a_columns, a_columns.view.permute({1, 0})),
                              viewed(w_linear, w_linear.view.permute({0, 2, 1})), offs));
    // Both operands reading K with unit stride: the expert GEMV's form (f32; bf16 where the CPU
    // multiplies bf16 pairs).
    b.output(b.grouped_matmul(a, viewed(w_linear, w_linear.view.permute({0, 2, 1})), offs));
    for (const std::vector<int64_t>& ends : routings) {
      const int64_t rows = ends.back() > 10 ? ends.back() : 10;
      expect_matches_reference(
          b.graph,
          {random_tensor(t, {rows, 12}, rng), random_tensor(t, {12, rows}, rng), random_tensor(t, {4, 12, 7}, rng),
           random_tensor(t, {4, 7, 12}, rng), HostTensor::of<int64_t>(DType::I64, {4}, ends)},
          std::string("grouped matmul ") + ir::dtype_name(t), t == DType::F32 ? 1e-5 : (t == DType::F16 ? 5e-3 : -1));
    }
  }
}

TEST(CpuRuntime, GatherAndScatter) {
  std::mt19937 rng(9);
  for (DType t : {DType::F32, DType::I64, DType::BF16, DType::Bool}) {
    IrTestBuilder b;
    auto data = b.input("data", t, {6, 5});
    auto index = b.input("index", DType::I64, {4, 5});
    b.output(b.gather(data, index, 0));
    auto src = b.input("src", t, {4, 5});
    b.output(b.scatter(data, index, src, 0, false));
    if (t != DType::Bool) b.output(b.scatter(data, index, src, 0, true));
    std::vector<int64_t> idx;
    for (int i = 0; i < 20; ++i) idx.push_back(static_cast<int64_t>(rng() % 6));
    expect_matches_reference(b.graph,
                             {random_tensor(t, {6, 5}, rng), HostTensor::of<int64_t>(DType::I64, {4, 5}, idx),
                              random_tensor(t, {4, 5}, rng)},
                             std::string("gather/scatter ") + ir::dtype_name(t));
  }
}

TEST(CpuRuntime, GatherOutOfRangeIsUserError) {
  IrTestBuilder b;
  auto data = b.input("data", DType::F32, {3});
  auto index = b.input("index", DType::I64, {2});
  b.output(b.gather(data, index, 0));
  auto exe = compile_cpu(b.graph);
  std::vector<HostTensor> inputs = {HostTensor::of<float>(DType::F32, {3}, {1, 2, 3}),
                                    HostTensor::of<int64_t>(DType::I64, {2}, {0, 7})};
  EXPECT_THROW(run_executable(*exe, b.graph, inputs), UserError);
}

TEST(CpuRuntime, IntegerDivisionByZeroIsUserError) {
  IrTestBuilder b;
  auto x = b.input("x", DType::I32, {2});
  auto y = b.input("y", DType::I32, {2});
  b.output(b.binary(Op::Div, x, y));
  auto exe = compile_cpu(b.graph);
  std::vector<HostTensor> inputs = {HostTensor::of<int32_t>(DType::I32, {2}, {1, 2}),
                                    HostTensor::of<int32_t>(DType::I32, {2}, {1, 0})};
  EXPECT_THROW(run_executable(*exe, b.graph, inputs), UserError);
}

TEST(CpuRuntime, SymbolicShapesOneCompile) {
  std::mt19937 rng(10);
  const Expr s = Expr::symbol("s0");
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, s});
  auto w = b.weight("w", DType::F32, {s});
  auto e = b.binary(Op::Mul, x, viewed(w, w.view.unsqueeze(0).expand({2, s})));
  b.output(b.reduce(Op::SumReduce, e, 1));
  b.output(e);
  for (int64_t n : {1, 7, 64, 1000}) {
    HostTensor weight = random_tensor(DType::F32, {n}, rng);
    std::map<std::string, runtime::BufferRef> weights = {{"w", weight.ref()}};
    expect_matches_reference(b.graph, {random_tensor(DType::F32, {2, n}, rng)}, "symbolic n=" + std::to_string(n), 1e-5,
                             weights);
  }
}

TEST(CpuRuntime, ScalarGraph) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {});
  b.output(b.binary(Op::Mul, x, x));
  expect_matches_reference(b.graph, {HostTensor::of<float>(DType::F32, {}, {3.0f})}, "rank 0");
}

TEST(CpuRuntime, EmptyTensors) {
  std::mt19937 rng(11);
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {0, 4});
  b.output(b.unary(Op::Exp, x));
  b.output(b.reduce(Op::SumReduce, x, 0));
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {0, 4}, rng)}, "empty");
}

TEST(CpuRuntime, ConcurrentRuns) {
  std::mt19937 rng(12);
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {64, 256});
  auto m = b.reduce(Op::MaxReduce, x, 1);
  b.output(b.binary(Op::Sub, x, viewed(m, m.view.expand({64, 256}))));
  auto exe = compile_cpu(b.graph);
  HostTensor input = random_tensor(DType::F32, {64, 256}, rng);
  std::vector<HostTensor> ref_inputs = {input};
  const auto expected = run_reference(b.graph, ref_inputs);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        std::vector<HostTensor> in = {input};
        const auto out = run_executable(*exe, b.graph, in);
        expect_same(out[0], expected[0], 0, "concurrent");
      }
    });
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace luminal::testing
