// The reference runtime against results computed independently here, primitive by primitive.
#include "runtime/reference/reference_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include "common/error.h"
#include "common/half.h"
#include "ir_test_builder.h"
#include "runtime/cpu_factory.h"

namespace luminal::testing {
namespace {

using ir::Expr;
using ir::View;

HostTensor f32(std::vector<int64_t> sizes, const std::vector<float>& values) {
  return HostTensor::of<float>(DType::F32, std::move(sizes), values);
}
HostTensor i64(std::vector<int64_t> sizes, const std::vector<int64_t>& values) {
  return HostTensor::of<int64_t>(DType::I64, std::move(sizes), values);
}
HostTensor u8(std::vector<int64_t> sizes, const std::vector<uint8_t>& values) {
  return HostTensor::of<uint8_t>(DType::U8, std::move(sizes), values);
}
HostTensor booleans(std::vector<int64_t> sizes, const std::vector<uint8_t>& values) {
  return HostTensor::of<uint8_t>(DType::Bool, std::move(sizes), values);
}

// A one-node graph over contiguous inputs of the given dtypes and one shape.
std::vector<HostTensor> run_one(Op op, std::vector<HostTensor> inputs, std::optional<DType> dtype = std::nullopt) {
  IrTestBuilder b;
  std::vector<TensorRef> refs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::Shape shape(inputs[i].sizes.begin(), inputs[i].sizes.end());
    refs.push_back(b.input("x" + std::to_string(i), inputs[i].dtype, shape));
  }
  if (refs.size() == 1) b.output(b.unary(op, refs[0], dtype));
  if (refs.size() == 2) b.output(b.binary(op, refs[0], refs[1]));
  if (refs.size() == 3) b.output(b.where(refs[0], refs[1], refs[2]));
  return run_reference(b.graph, std::move(inputs));
}

// ---------------------------------------------------------------- elementwise, f32

TEST(ReferenceElementwise, UnaryOpsF32) {
  const std::vector<float> x = {0.25f, 0.5f, 1.0f, 1.75f, 3.0f};
  const std::vector<std::pair<Op, std::function<double(double)>>> cases = {
      {Op::Neg, [](double v) { return -v; }},
      {Op::Abs, [](double v) { return std::fabs(v); }},
      {Op::Recip, [](double v) { return 1.0 / v; }},
      {Op::Sqrt, [](double v) { return std::sqrt(v); }},
      {Op::Exp, [](double v) { return std::exp(v); }},
      {Op::Log, [](double v) { return std::log(v); }},
      {Op::Sin, [](double v) { return std::sin(v); }},
      {Op::Cos, [](double v) { return std::cos(v); }},
      {Op::Tanh, [](double v) { return std::tanh(v); }},
      {Op::Erf, [](double v) { return std::erf(v); }},
      {Op::Sigmoid, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {Op::Floor, [](double v) { return std::floor(v); }},
      {Op::Ceil, [](double v) { return std::ceil(v); }},
      {Op::Trunc, [](double v) { return std::trunc(v); }},
      {Op::Copy, [](double v) { return v; }},
  };
  for (const auto& [op, fn] : cases) {
    const std::vector<float> out = run_one(op, {f32({5}, x)})[0].values<float>();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_FLOAT_EQ(out[i], static_cast<float>(fn(x[i]))) << ir::op_name(op) << " of " << x[i];
  }
}

TEST(ReferenceElementwise, RoundIsHalfToEven) {
  const auto out = run_one(Op::Round, {f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f})})[0].values<float>();
  EXPECT_EQ(out, (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 3.0f}));
}

TEST(ReferenceElementwise, IsNanAndNot) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(run_one(Op::IsNan, {f32({3}, {1.0f, nan, -nan})}, DType::Bool)[0].values<uint8_t>(),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(run_one(Op::Not, {booleans({2}, {0, 1})})[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(run_one(Op::Not, {i64({2}, {0, 5})})[0].values<int64_t>(), (std::vector<int64_t>{-1, -6}));
}

TEST(ReferenceElementwise, BinaryOpsF32) {
  const std::vector<float> a = {-7.5f, 2.0f, 3.0f, 0.5f};
  const std::vector<float> b = {2.0f, -3.0f, 3.0f, 4.0f};
  const std::vector<std::pair<Op, std::function<double(double, double)>>> cases = {
      {Op::Add, [](double x, double y) { return x + y; }},
      {Op::Sub, [](double x, double y) { return x - y; }},
      {Op::Mul, [](double x, double y) { return x * y; }},
      {Op::Div, [](double x, double y) { return x / y; }},
      {Op::Mod, [](double x, double y) { return std::fmod(x, y); }},
      {Op::Max, [](double x, double y) { return std::max(x, y); }},
      {Op::Min, [](double x, double y) { return std::min(x, y); }},
      {Op::Pow, [](double x, double y) { return std::pow(x, y); }},
  };
  for (const auto& [op, fn] : cases) {
    const std::vector<float> out = run_one(op, {f32({4}, a), f32({4}, b)})[0].values<float>();
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_FLOAT_EQ(out[i], static_cast<float>(fn(a[i], b[i]))) << ir::op_name(op) << " at " << i;
  }
  // fmod keeps the dividend's sign: -7.5 fmod 2 = -1.5.
  EXPECT_FLOAT_EQ(run_one(Op::Mod, {f32({1}, {-7.5f}), f32({1}, {2.0f})})[0].values<float>()[0], -1.5f);
}

TEST(ReferenceElementwise, ComparisonsProduceBool) {
  const auto a = f32({3}, {1.0f, 2.0f, 3.0f});
  const auto b = f32({3}, {2.0f, 2.0f, 2.0f});
  EXPECT_EQ(run_one(Op::Lt, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(run_one(Op::Le, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(run_one(Op::Eq, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(run_one(Op::Ne, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(ReferenceElementwise, MaxMinPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto a = f32({2}, {nan, 1.0f});
  const auto b = f32({2}, {1.0f, nan});
  for (Op op : {Op::Max, Op::Min}) {
    const auto out = run_one(op, {a, b})[0].values<float>();
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1])) << ir::op_name(op);
  }
}

TEST(ReferenceElementwise, WhereSelectsPerElement) {
  const auto out = run_one(Op::Where, {booleans({3}, {1, 0, 1}), f32({3}, {1, 2, 3}), f32({3}, {-1, -2, -3})});
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{1, -2, 3}));
}

TEST(ReferenceElementwise, CastTruncatesAndTestsNonZero) {
  const auto x = f32({4}, {-2.7f, 2.7f, 0.0f, 0.1f});
  EXPECT_EQ(run_one(Op::Cast, {x}, DType::I32)[0].values<int32_t>(), (std::vector<int32_t>{-2, 2, 0, 0}));
  EXPECT_EQ(run_one(Op::Cast, {x}, DType::Bool)[0].values<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(run_one(Op::Cast, {booleans({2}, {1, 0})}, DType::F32)[0].values<float>(), (std::vector<float>{1, 0}));
  // Like torch on x86: truncate, then wrap to the width.
  EXPECT_EQ(run_one(Op::Cast, {f32({2}, {-1.0f, 300.5f})}, DType::U8)[0].values<uint8_t>(), (std::vector<uint8_t>{255, 44}));
  // i64 -> f32 rounds once: 2^24 + 1 is not representable and rounds to even.
  EXPECT_EQ(run_one(Op::Cast, {i64({1}, {(1 << 24) + 1})}, DType::F32)[0].values<float>()[0], 16777216.0f);
  // f32 -> bf16 rounds to nearest even.
  const uint16_t bf = run_one(Op::Cast, {f32({1}, {1.00390625f})}, DType::BF16)[0].values<uint16_t>()[0];
  EXPECT_EQ(bf, float_to_bf16(1.00390625f));
}

// ---------------------------------------------------------------- other dtypes

TEST(ReferenceDtypes, HalfTypesComputeInFloatAndRoundOnce) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    const auto to = [dtype](float v) { return dtype == DType::F16 ? float_to_half(v) : float_to_bf16(v); };
    const auto from = [dtype](uint16_t v) { return dtype == DType::F16 ? half_to_float(v) : bf16_to_float(v); };
    const std::vector<float> a = {1.0f, 0.1f, 3.3f, 1000.5f};
    const std::vector<float> b = {0.00390625f, 0.2f, -1.7f, 0.25f};
    std::vector<uint16_t> a_bits, b_bits;
    for (float v : a) a_bits.push_back(to(v));
    for (float v : b) b_bits.push_back(to(v));
    const auto sum = run_one(Op::Add, {HostTensor::of<uint16_t>(dtype, {4}, a_bits), HostTensor::of<uint16_t>(dtype, {4}, b_bits)});
    const auto exp = run_one(Op::Exp, {HostTensor::of<uint16_t>(dtype, {4}, b_bits)});
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(sum[0].values<uint16_t>()[i], to(from(a_bits[i]) + from(b_bits[i]))) << dtype_name(dtype) << " " << i;
      EXPECT_EQ(exp[0].values<uint16_t>()[i], to(std::exp(from(b_bits[i])))) << dtype_name(dtype) << " " << i;
    }
  }
}

TEST(ReferenceDtypes, F64KeepsDoublePrecision) {
  const auto out = run_one(Op::Add, {HostTensor::of<double>(DType::F64, {1}, {1.0}),
                                     HostTensor::of<double>(DType::F64, {1}, {1e-12})});
  EXPECT_EQ(out[0].values<double>()[0], 1.0 + 1e-12);
}

TEST(ReferenceDtypes, I64IsExactAbove2To53) {
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_EQ(run_one(Op::Add, {i64({1}, {big}), i64({1}, {2})})[0].values<int64_t>()[0], big + 2);
  EXPECT_EQ(run_one(Op::Eq, {i64({1}, {big}), i64({1}, {big - 1})})[0].values<uint8_t>()[0], 0);
  IrTestBuilder b;
  b.output(b.reduce(Op::SumReduce, b.constant(ir::Scalar::of_int(big), DType::I64, {3}), 0));
  EXPECT_EQ(run_reference(b.graph, {})[0].values<int64_t>()[0], 3 * big);
}

TEST(ReferenceDtypes, IntegersWrapAround) {
  EXPECT_EQ(run_one(Op::Add, {u8({2}, {250, 3}), u8({2}, {10, 4})})[0].values<uint8_t>(), (std::vector<uint8_t>{4, 7}));
  EXPECT_EQ(run_one(Op::Neg, {u8({1}, {5})})[0].values<uint8_t>()[0], 251);
  EXPECT_EQ(run_one(Op::Mul, {u8({1}, {16}), u8({1}, {17})})[0].values<uint8_t>()[0], (16 * 17) % 256);
  const auto i8_sum = run_one(Op::Add, {HostTensor::of<int8_t>(DType::I8, {1}, {127}), HostTensor::of<int8_t>(DType::I8, {1}, {1})});
  EXPECT_EQ(i8_sum[0].values<int8_t>()[0], -128);
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(run_one(Op::Add, {i64({1}, {max}), i64({1}, {1})})[0].values<int64_t>()[0], std::numeric_limits<int64_t>::min());
  const auto i16 = run_one(Op::Sub, {HostTensor::of<int16_t>(DType::I16, {1}, {-32768}), HostTensor::of<int16_t>(DType::I16, {1}, {1})});
  EXPECT_EQ(i16[0].values<int16_t>()[0], 32767);
}

TEST(ReferenceDtypes, IntegerDivisionModAndPow) {
  const auto a = HostTensor::of<int32_t>(DType::I32, {4}, {-7, 7, 3, -1});
  const auto b = HostTensor::of<int32_t>(DType::I32, {4}, {2, -2, 4, -3});
  EXPECT_EQ(run_one(Op::Div, {a, b})[0].values<int32_t>(), (std::vector<int32_t>{-3, -3, 0, 0}));
  EXPECT_EQ(run_one(Op::Mod, {a, b})[0].values<int32_t>(), (std::vector<int32_t>{-1, 1, 3, -1}));
  EXPECT_EQ(run_one(Op::Pow, {a, b})[0].values<int32_t>(), (std::vector<int32_t>{49, 0, 81, -1}));
  EXPECT_EQ(run_one(Op::Pow, {i64({2}, {3, 1}), i64({2}, {40, -5})})[0].values<int64_t>(),
            (std::vector<int64_t>{static_cast<int64_t>(12157665459056928801ull), 1}));
}

TEST(ReferenceDtypes, IntegerDivisionByZeroNamesTheOrigin) {
  for (Op op : {Op::Div, Op::Mod}) {
    const std::string message = user_error_of([&] { run_one(op, {i64({2}, {1, 2}), i64({2}, {1, 0})}); });
    EXPECT_NE(message.find("by zero"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("test::") + ir::op_name(op)), std::string::npos) << message;
  }
  // Floats divide by zero to inf, as torch does.
  EXPECT_TRUE(std::isinf(run_one(Op::Div, {f32({1}, {1}), f32({1}, {0})})[0].values<float>()[0]));
}

TEST(ReferenceDtypes, BoolLogic) {
  const auto a = booleans({4}, {0, 0, 1, 1});
  const auto b = booleans({4}, {0, 1, 0, 1});
  EXPECT_EQ(run_one(Op::And, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(run_one(Op::Or, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(run_one(Op::Xor, {a, b})[0].values<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(run_one(Op::And, {i64({1}, {12}), i64({1}, {10})})[0].values<int64_t>()[0], 8);
}

TEST(ReferenceDtypes, FloatOnlyOpsOnIntegersAreRejectedAtCompile) {
  IrTestBuilder b;
  b.output(b.unary(Op::Exp, b.input("x", DType::I32, {2})));
  EXPECT_THROW(compile_reference(b.graph), UnsupportedError);
  IrTestBuilder c;
  auto x = c.input("x", DType::F32, {2});
  c.output(c.binary(Op::And, x, x));
  EXPECT_THROW(compile_reference(c.graph), UnsupportedError);
}

// ---------------------------------------------------------------- sources

TEST(ReferenceSources, ConstantAndIota) {
  IrTestBuilder b;
  b.output(b.iota(1, DType::I64, {2, 3}));
  b.output(b.constant(2.5, DType::F32, {2}));
  b.output(b.iota(0, DType::F16, {3}));
  const auto out = run_reference(b.graph, {});
  EXPECT_EQ(out[0].values<int64_t>(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{2.5f, 2.5f}));
  EXPECT_EQ(out[2].values<uint16_t>(), (std::vector<uint16_t>{float_to_half(0), float_to_half(1), float_to_half(2)}));
}

// ---------------------------------------------------------------- views

TEST(ReferenceViews, PermuteExpandSliceSelectFeedElementwise) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, 3});  // [[0 1 2] [3 4 5]]
  auto row = b.input("row", DType::F32, {1, 3});
  // permute: x^T (3 x 2) + x^T
  auto t = viewed(x, x.view.permute({1, 0}));
  b.output(b.binary(Op::Add, t, t));
  // expand a [1, 3] row to [2, 3] (stride 0) and add to x
  b.output(b.binary(Op::Add, x, viewed(row, row.view.expand({2, 3}))));
  // slice columns 1..3 of x (offset 1) times itself
  auto sliced = viewed(x, x.view.slice(1, 1, 3, 1));
  b.output(b.binary(Op::Mul, sliced, sliced));
  // select row 1 of x, negated
  b.output(b.unary(Op::Neg, viewed(x, x.view.select(0, 1))));
  const auto out = run_reference(b.graph, {f32({2, 3}, {0, 1, 2, 3, 4, 5}), f32({1, 3}, {10, 20, 30})});
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{0, 6, 2, 8, 4, 10}));
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{10, 21, 32, 13, 24, 35}));
  EXPECT_EQ(out[2].values<float>(), (std::vector<float>{1, 4, 16, 25}));
  EXPECT_EQ(out[3].values<float>(), (std::vector<float>{-3, -4, -5}));
}

TEST(ReferenceViews, OutputViewIsMaterialised) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, 3});
  auto y = b.unary(Op::Copy, x);
  b.output(viewed(y, y.view.permute({1, 0})));
  const auto out = run_reference(b.graph, {f32({2, 3}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(out[0].sizes, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(ReferenceViews, NonContiguousUserInput) {
  IrTestBuilder b;
  b.output(b.unary(Op::Neg, b.input("x", DType::F32, {2, 3})));
  // Storage [[0 1] [2 3] [4 5]] read transposed: x = [[0 2 4] [1 3 5]].
  auto x = HostTensor::of<float>(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5}, {1, 2});
  EXPECT_EQ(run_reference(b.graph, {x})[0].values<float>(), (std::vector<float>{0, -2, -4, -1, -3, -5}));
}

// ---------------------------------------------------------------- reductions

TEST(ReferenceReduce, EveryOpOverEveryAxis) {
  const std::vector<int64_t> sizes = {2, 3, 4};
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 11) - 4.0f;
  const auto at = [&](int64_t i, int64_t j, int64_t k) { return x[static_cast<size_t>((i * 3 + j) * 4 + k)]; };
  for (Op op : {Op::SumReduce, Op::MaxReduce, Op::MinReduce, Op::ProdReduce}) {
    for (int axis = 0; axis < 3; ++axis) {
      IrTestBuilder b;
      b.output(b.reduce(op, b.input("x", DType::F32, {2, 3, 4}), axis));
      const auto out = run_reference(b.graph, {f32(sizes, x)})[0];
      std::vector<int64_t> expected_sizes = sizes;
      expected_sizes[axis] = 1;
      ASSERT_EQ(out.sizes, expected_sizes);
      const auto values = out.values<float>();
      size_t n = 0;
      for (int64_t i = 0; i < expected_sizes[0]; ++i)
        for (int64_t j = 0; j < expected_sizes[1]; ++j)
          for (int64_t k = 0; k < expected_sizes[2]; ++k) {
            double acc = op == Op::SumReduce ? 0 : op == Op::ProdReduce ? 1 : (op == Op::MaxReduce ? -1e30 : 1e30);
            for (int64_t r = 0; r < sizes[axis]; ++r) {
              const double v = at(axis == 0 ? r : i, axis == 1 ? r : j, axis == 2 ? r : k);
              acc = op == Op::SumReduce ? acc + v : op == Op::ProdReduce ? acc * v
                  : op == Op::MaxReduce ? std::max(acc, v) : std::min(acc, v);
            }
            EXPECT_FLOAT_EQ(values[n++], static_cast<float>(acc)) << ir::op_name(op) << " axis " << axis;
          }
    }
  }
}

TEST(ReferenceReduce, MaxPropagatesNanAndIntegersAreExact) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  IrTestBuilder b;
  b.output(b.reduce(Op::MaxReduce, b.input("x", DType::F32, {3}), 0));
  EXPECT_TRUE(std::isnan(run_reference(b.graph, {f32({3}, {1, nan, 2})})[0].values<float>()[0]));
  IrTestBuilder c;
  c.output(c.reduce(Op::ProdReduce, c.input("x", DType::U8, {2}), 0));
  EXPECT_EQ(run_reference(c.graph, {u8({2}, {16, 17})})[0].values<uint8_t>()[0], (16 * 17) % 256);
}

TEST(ReferenceReduce, EmptyAxis) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, 0});
  b.output(b.reduce(Op::SumReduce, x, 1));
  b.output(b.reduce(Op::ProdReduce, x, 1));
  const auto out = run_reference(b.graph, {f32({2, 0}, {})});
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{1, 1}));
  IrTestBuilder c;
  c.output(c.reduce(Op::MaxReduce, c.input("x", DType::F32, {2, 0}), 1));
  EXPECT_NE(user_error_of([&] { run_reference(c.graph, {f32({2, 0}, {})}); }).find("size 0"), std::string::npos);
}

// ---------------------------------------------------------------- scans

// A one-CumSum graph over a contiguous input along `axis`.
HostTensor run_cumsum(HostTensor x, int axis) {
  IrTestBuilder b;
  b.output(b.cumsum(b.input("x", x.dtype, ir::Shape(x.sizes.begin(), x.sizes.end())), axis));
  return run_reference(b.graph, {std::move(x)})[0];
}

std::vector<uint16_t> halves_of(uint16_t (*narrow)(float), const std::vector<float>& values) {
  std::vector<uint16_t> out;
  for (float v : values) out.push_back(narrow(v));
  return out;
}

// The accumulator is torch's CPU one (ops.def), pinned by sums it changes. Values are eager's:
// torch.cumsum(torch.tensor([1e8] + [1.0] * 16)) and the like.
TEST(ReferenceScan, CumSumAccumulatesAsTorchsCpuKernel) {
  // f32 in double: the ones add up, and every sum rounds to f32 on its own (in float the sum
  // would stay 1e8, 1e8 + 1 rounding back to 1e8 at every step).
  std::vector<float> ones_after_1e8(17, 1.0f);
  ones_after_1e8[0] = 1e8f;
  std::vector<float> expected_f32(17, 100000000.0f);
  for (size_t i = 5; i < 12; ++i) expected_f32[i] = 100000008.0f;
  for (size_t i = 12; i < 17; ++i) expected_f32[i] = 100000016.0f;
  EXPECT_EQ(run_cumsum(f32({17}, ones_after_1e8), 0).values<float>(), expected_f32);

  // f16 and bf16 in float: the sum runs past what the 16-bit type holds, each element rounds it
  // (ties to even). In f16 itself the sum would stay 2048 (256 in bf16).
  const std::vector<float> f16_in = {2048, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<float> f16_expected = {2048, 2048, 2050, 2052, 2052, 2052, 2054, 2056, 2056};
  EXPECT_EQ(run_cumsum(HostTensor::of<uint16_t>(DType::F16, {9}, halves_of(float_to_half, f16_in)), 0)
                .values<uint16_t>(),
            halves_of(float_to_half, f16_expected));
  // ... and not in double: 2^-14 is below half an f32 ulp of 2048, so the float sum stays 2048,
  // where 16400 of them in double would reach 2049.001 and round to 2050.
  std::vector<float> tiny_after_2048(16401, 1.0f / 16384);
  tiny_after_2048[0] = 2048;
  EXPECT_EQ(run_cumsum(HostTensor::of<uint16_t>(DType::F16, {16401}, halves_of(float_to_half, tiny_after_2048)), 0)
                .values<uint16_t>(),
            std::vector<uint16_t>(16401, float_to_half(2048)));
  const std::vector<float> bf16_in = {256, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<float> bf16_expected = {256, 256, 258, 260, 260, 260, 262, 264, 264};
  EXPECT_EQ(run_cumsum(HostTensor::of<uint16_t>(DType::BF16, {9}, halves_of(float_to_bf16, bf16_in)), 0)
                .values<uint16_t>(),
            halves_of(float_to_bf16, bf16_expected));

  // Integers in i64, wrapping to the output width on store only: cumsum(dtype=torch.int8).
  EXPECT_EQ(run_cumsum(HostTensor::of<int8_t>(DType::I8, {4}, {100, 100, 100, -50}), 0).values<int8_t>(),
            (std::vector<int8_t>{100, -56, 44, -6}));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(run_cumsum(i64({3}, {kMax, 1, 1}), 0).values<int64_t>(),
            (std::vector<int64_t>{kMax, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 1}));
}

TEST(ReferenceScan, CumSumAlongEitherAxisOfATransposedView) {
  for (int axis : {0, 1}) {
    IrTestBuilder b;
    auto x = b.input("x", DType::I32, {2, 3});
    b.output(b.cumsum(viewed(x, x.view.permute({1, 0})), axis));  // [[1, 4], [2, 5], [3, 6]]
    const auto out = run_reference(b.graph, {HostTensor::of<int32_t>(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6})})[0];
    EXPECT_EQ(out.sizes, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(out.values<int32_t>(), axis == 0 ? (std::vector<int32_t>{1, 4, 3, 9, 6, 15})
                                               : (std::vector<int32_t>{1, 5, 2, 7, 3, 9}))
        << "axis " << axis;
  }
}

TEST(ReferenceScan, CumSumOverEmptyAxisOrNoRows) {
  EXPECT_EQ(run_cumsum(f32({2, 0}, {}), 1).sizes, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(run_cumsum(f32({0, 3}, {}), 1).sizes, (std::vector<int64_t>{0, 3}));
}

TEST(ReferenceScan, MalformedCumSumFailsVerify) {
  const auto verify_message = [](DType in, ir::Shape in_shape, DType out, ir::Shape out_shape, int axis) {
    IrTestBuilder b;
    ir::Node node = IrTestBuilder::make(Op::CumSum, out, std::move(out_shape), {b.input("x", in, std::move(in_shape))});
    node.axis = axis;
    b.output(b.add(node));
    try {
      ir::verify(b.graph);
    } catch (const InternalError& e) {
      return std::string(e.what());
    }
    return std::string("verified");
  };
  EXPECT_EQ(verify_message(DType::F32, {2, 3}, DType::F32, {2, 3}, 1), "verified");
  EXPECT_NE(verify_message(DType::F32, {2, 3}, DType::F32, {2, 1}, 1)
                .find("scan input has shape [2, 3], node has [2, 1]"),
            std::string::npos);
  EXPECT_NE(verify_message(DType::F32, {2, 3}, DType::F64, {2, 3}, 1).find("scan of f32 to f64"), std::string::npos);
  EXPECT_NE(verify_message(DType::F32, {2, 3}, DType::F32, {2, 3}, 2).find("scan axis 2"), std::string::npos);
  EXPECT_NE(verify_message(DType::F32, {2, 3}, DType::F32, {2, 3}, -1).find("scan axis -1"), std::string::npos);
  EXPECT_NE(verify_message(DType::Bool, {4}, DType::Bool, {4}, 0).find("verify: node %1 CumSum"), std::string::npos);
  EXPECT_NE(verify_message(DType::Bool, {4}, DType::Bool, {4}, 0).find("scan of bool"), std::string::npos);
}

// ---------------------------------------------------------------- matmul

std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k,
                                 int64_t n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

std::vector<float> iota_floats(size_t count, float scale) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(i) * scale - 1.0f;
  return v;
}

void expect_near_all(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-4 * (1 + std::fabs(expected[i])));
}

TEST(ReferenceMatmul, PlainTransposedAndStridedOperands) {
  const auto a = iota_floats(6, 0.5f);   // [2, 3]
  const auto bt = iota_floats(12, 0.25f);  // [4, 3] storage, used as b = bt^T [3, 4]
  std::vector<double> a_d(a.begin(), a.end()), b_d(12);
  for (int k = 0; k < 3; ++k)
    for (int n = 0; n < 4; ++n) b_d[k * 4 + n] = bt[n * 3 + k];
  const auto expected = naive_matmul(a_d, b_d, 2, 3, 4);

  IrTestBuilder g;
  auto a_ref = g.input("a", DType::F32, {2, 3});
  auto bt_ref = g.input("bt", DType::F32, {4, 3});
  auto b_ref = viewed(bt_ref, bt_ref.view.permute({1, 0}));  // column-major: BLAS transposes in place
  g.output(g.matmul(a_ref, b_ref));
  auto b_copy = g.unary(Op::Copy, b_ref);
  g.output(g.matmul(a_ref, b_copy));  // row-major contiguous
  // A strided view no BLAS layout expresses: every other column of a [2, 6] tensor.
  auto wide = g.input("wide", DType::F32, {2, 6});
  g.output(g.matmul(viewed(wide, wide.view.slice(1, 0, 6, 2)), b_copy));
  std::vector<float> wide_values(12, 99.0f);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) wide_values[i * 6 + k * 2] = a[i * 3 + k];
  const auto out = run_reference(g.graph, {f32({2, 3}, a), f32({4, 3}, bt), f32({2, 6}, wide_values)});
  for (const auto& result : out) expect_near_all(result.values<float>(), expected);
}

TEST(ReferenceMatmul, BatchDimsWithStrideZero) {
  // a [3, 2, 2] broadcast from one [2, 2] matrix; b a real batch of 3.
  IrTestBuilder g;
  auto a = g.input("a", DType::F64, {1, 2, 2});
  auto b = g.input("b", DType::F64, {3, 2, 2});
  g.output(g.matmul(viewed(a, a.view.expand({3, 2, 2})), b));
  const std::vector<double> a_values = {1, 2, 3, 4};
  std::vector<double> b_values(12);
  for (size_t i = 0; i < 12; ++i) b_values[i] = static_cast<double>(i) - 5.0;
  const auto out = run_reference(g.graph, {HostTensor::of<double>(DType::F64, {1, 2, 2}, a_values),
                                           HostTensor::of<double>(DType::F64, {3, 2, 2}, b_values)})[0]
                       .values<double>();
  for (int batch = 0; batch < 3; ++batch) {
    const std::vector<double> b_batch(b_values.begin() + batch * 4, b_values.begin() + batch * 4 + 4);
    const auto expected = naive_matmul(a_values, b_batch, 2, 2, 2);
    for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(out[batch * 4 + i], expected[i]);
  }
}

TEST(ReferenceMatmul, HalfTypesAndIntegers) {
  IrTestBuilder g;
  auto a = g.input("a", DType::BF16, {2, 2});
  auto b = g.input("b", DType::BF16, {2, 2});
  g.output(g.matmul(a, b));
  const std::vector<float> av = {1.5f, -2.0f, 0.25f, 3.0f};
  const std::vector<float> bv = {2.0f, 1.0f, -1.0f, 0.5f};
  std::vector<uint16_t> ab, bb;
  for (float v : av) ab.push_back(float_to_bf16(v));
  for (float v : bv) bb.push_back(float_to_bf16(v));
  const auto out = run_reference(g.graph, {HostTensor::of<uint16_t>(DType::BF16, {2, 2}, ab),
                                           HostTensor::of<uint16_t>(DType::BF16, {2, 2}, bb)})[0]
                       .values<uint16_t>();
  const auto expected = naive_matmul({av.begin(), av.end()}, {bv.begin(), bv.end()}, 2, 2, 2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], float_to_bf16(static_cast<float>(expected[i])));

  IrTestBuilder h;
  auto ha = h.input("a", DType::I64, {1, 2});
  auto hb = h.input("b", DType::I64, {2, 1});
  h.output(h.matmul(ha, hb));
  const int64_t big = int64_t{1} << 60;
  EXPECT_EQ(run_reference(h.graph, {i64({1, 2}, {big, 3}), i64({2, 1}, {3, 5})})[0].values<int64_t>()[0],
            3 * big + 15);
}

TEST(ReferenceMatmul, ZeroSizedDims) {
  IrTestBuilder g;
  auto a = g.input("a", DType::F32, {2, 0});
  auto b = g.input("b", DType::F32, {0, 3});
  auto c = g.input("c", DType::F32, {0, 4});
  auto d = g.input("d", DType::F32, {4, 3});
  g.output(g.matmul(a, b));
  g.output(g.matmul(c, d));
  const auto out = run_reference(g.graph, {f32({2, 0}, {}), f32({0, 3}, {}), f32({0, 4}, {}), f32({4, 3}, std::vector<float>(12, 1))});
  EXPECT_EQ(out[0].values<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(out[1].sizes, (std::vector<int64_t>{0, 3}));
}

// ---------------------------------------------------------------- gather / scatter

TEST(ReferenceIndexing, GatherAlongAxis) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {2, 3});
  auto i = g.input("i", DType::I64, {2, 2});
  g.output(g.gather(x, i, 1));
  const auto out = run_reference(g.graph, {f32({2, 3}, {0, 1, 2, 3, 4, 5}), i64({2, 2}, {2, 0, 1, 1})});
  EXPECT_EQ(out[0].values<float>(), (std::vector<float>{2, 0, 4, 4}));
}

TEST(ReferenceIndexing, GatherOutOfRangeAndNegativeAreUserErrors) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {3});
  auto i = g.input("i", DType::I64, {1});
  g.output(g.gather(x, i, 0));
  for (int64_t bad : {3, -1}) {
    const std::string message = user_error_of([&] { run_reference(g.graph, {f32({3}, {0, 1, 2}), i64({1}, {bad})}); });
    EXPECT_NE(message.find("index " + std::to_string(bad) + " is out of bounds"), std::string::npos) << message;
    EXPECT_NE(message.find("size 3"), std::string::npos) << message;
    EXPECT_NE(message.find("test::Gather"), std::string::npos) << message;
  }
}

TEST(ReferenceIndexing, ScatterLastWriteWinsOrAccumulates) {
  for (bool accumulate : {false, true}) {
    IrTestBuilder g;
    auto x = g.input("x", DType::F32, {2, 3});
    auto i = g.input("i", DType::I64, {2, 2});
    auto src = g.input("src", DType::F32, {2, 2});
    g.output(g.scatter(x, i, src, 1, accumulate));
    const auto out = run_reference(g.graph, {f32({2, 3}, {0, 1, 2, 3, 4, 5}), i64({2, 2}, {1, 1, 0, 2}),
                                             f32({2, 2}, {10, 20, 30, 40})});
    const std::vector<float> expected = accumulate ? std::vector<float>{0, 31, 2, 33, 4, 45}
                                                   : std::vector<float>{0, 20, 2, 30, 4, 40};
    EXPECT_EQ(out[0].values<float>(), expected) << "accumulate=" << accumulate;
  }
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {2});
  auto i = g.input("i", DType::I64, {1});
  auto s = g.input("s", DType::F32, {1});
  g.output(g.scatter(x, i, s, 0, false));
  EXPECT_NE(user_error_of([&] { run_reference(g.graph, {f32({2}, {0, 0}), i64({1}, {2}), f32({1}, {1})}); })
                .find("out of bounds"),
            std::string::npos);
}

// ---------------------------------------------------------------- executable behaviour

TEST(ReferenceExecutable, SymbolicShapeRunsAtTwoSizes) {
  const Expr s0 = Expr::symbol("s0");
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {s0, 2});
  g.output(g.reduce(Op::SumReduce, g.binary(Op::Mul, x, x), 0));
  g.output(g.iota(0, DType::I64, {s0 + 1}));
  auto executable = compile_reference(g.graph);
  std::vector<HostTensor> small = {f32({1, 2}, {1, 2})};
  std::vector<HostTensor> large = {f32({3, 2}, {1, 2, 3, 4, 5, 6})};
  const auto out_small = run_executable(*executable, g.graph, small);
  const auto out_large = run_executable(*executable, g.graph, large);
  EXPECT_EQ(out_small[0].values<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(out_large[0].values<float>(), (std::vector<float>{35, 56}));
  EXPECT_EQ(out_large[1].values<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  std::vector<HostTensor> wrong = {f32({3, 3}, std::vector<float>(9))};
  EXPECT_NE(user_error_of([&] { run_executable(*executable, g.graph, wrong); }).find("input 'x' has shape [3, 3]"),
            std::string::npos);
}

// An in-place KV-cache update: output 0 is written into the cache input's own memory, and
// output 1 returns the cache as it was, so it must be read before output 0 is written.
TEST(ReferenceExecutable, OutputAliasingAnInput) {
  IrTestBuilder g;
  auto cache = g.input("cache", DType::F32, {4});
  auto position = g.input("position", DType::I64, {1});
  auto value = g.input("value", DType::F32, {1});
  g.output(g.scatter(cache, position, value, 0, false));
  g.output(cache);
  auto executable = compile_reference(g.graph);
  auto cache_tensor = f32({4}, {1, 2, 3, 4});
  auto position_tensor = i64({1}, {2});
  auto value_tensor = f32({1}, {9});
  auto old_cache = HostTensor::zeros(DType::F32, {4});
  executable->run({cache_tensor.ref(), position_tensor.ref(), value_tensor.ref()},
                  {cache_tensor.ref(), old_cache.ref()}, {});
  EXPECT_EQ(cache_tensor.values<float>(), (std::vector<float>{1, 2, 9, 4}));
  EXPECT_EQ(old_cache.values<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ReferenceExecutable, WeightsAreBoundAndRebound) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {2});
  g.output(g.binary(Op::Add, x, g.weight("w", DType::F32, {2})));
  auto w1 = f32({2}, {10, 20});
  auto w2 = f32({2}, {100, 200});
  EXPECT_THROW(compile_reference(g.graph), UserError);
  auto wrong = f32({3}, {1, 2, 3});
  EXPECT_THROW(compile_reference(g.graph, {{"w", wrong.ref()}}), UserError);
  auto executable = compile_reference(g.graph, {{"w", w1.ref()}});
  std::vector<HostTensor> inputs = {f32({2}, {1, 2})};
  EXPECT_EQ(run_executable(*executable, g.graph, inputs)[0].values<float>(), (std::vector<float>{11, 22}));
  executable->rebind_weight("w", w2.ref());
  EXPECT_EQ(run_executable(*executable, g.graph, inputs)[0].values<float>(), (std::vector<float>{101, 202}));
  EXPECT_THROW(executable->rebind_weight("nope", w2.ref()), UserError);
}

TEST(ReferenceExecutable, NonContiguousWeight) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {2, 2});
  g.output(g.binary(Op::Sub, x, g.weight("w", DType::F32, {2, 2})));
  auto w = HostTensor::of<float>(DType::F32, {2, 2}, {1, 2, 3, 4}, {1, 2});  // [[1 3] [2 4]]
  EXPECT_EQ(run_reference(g.graph, {f32({2, 2}, {0, 0, 0, 0})}, {{"w", w.ref()}})[0].values<float>(),
            (std::vector<float>{-1, -3, -2, -4}));
}

TEST(ReferenceExecutable, ViewReadingOutsideItsProducerIsAnInternalError) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {2});
  g.output(g.unary(Op::Neg, viewed(x, View({2}, {2}, 0))));
  EXPECT_THROW(run_reference(g.graph, {f32({2}, {1, 2})}), InternalError);
}

TEST(ReferenceExecutable, InputDtypeMismatchIsAUserError) {
  IrTestBuilder g;
  g.output(g.unary(Op::Neg, g.input("x", DType::F32, {2})));
  EXPECT_NE(user_error_of([&] { run_reference(g.graph, {i64({2}, {1, 2})}); }).find("input 'x' is i64"),
            std::string::npos);
}

TEST(ReferenceExecutable, ZeroSizeTensorsFlowThroughEverything) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {0, 3});
  auto y = g.binary(Op::Add, x, g.constant(1.0, DType::F32, {0, 3}));
  g.output(y);
  g.output(g.reduce(Op::SumReduce, y, 0));
  g.output(g.gather(x, g.input("i", DType::I64, {0, 3}), 1));
  const auto out = run_reference(g.graph, {f32({0, 3}, {}), i64({0, 3}, {})});
  EXPECT_TRUE(out[0].bytes.empty());
  EXPECT_EQ(out[1].values<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(out[2].bytes.empty());
}

TEST(ReferenceExecutable, ConcurrentRunsOnDistinctBuffers) {
  IrTestBuilder g;
  auto x = g.input("x", DType::F32, {8, 8});
  auto y = g.matmul(x, viewed(x, x.view.permute({1, 0})));
  g.output(g.reduce(Op::SumReduce, g.unary(Op::Exp, g.binary(Op::Mul, y, g.constant(0.01, DType::F32, {8, 8}))), 1));
  auto executable = compile_reference(g.graph);
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<HostTensor> inputs = {f32({8, 8}, iota_floats(64, 0.01f * static_cast<float>(t + 1)))};
      for (int iteration = 0; iteration < 50; ++iteration) {
        auto out = run_executable(*executable, g.graph, inputs)[0].values<float>();
        if (iteration == 0) results[t] = out;
        if (out != results[t]) results[t].clear();  // a run disagreeing with the first: a race
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    std::vector<HostTensor> inputs = {f32({8, 8}, iota_floats(64, 0.01f * static_cast<float>(t + 1)))};
    EXPECT_EQ(results[t], run_executable(*executable, g.graph, inputs)[0].values<float>()) << "thread " << t;
  }
}

TEST(CpuFactory, CreatesTheReferenceRuntime) {
  const LuminalRuntimeFactory* factory = runtime::reference_runtime_factory();
  EXPECT_EQ(factory->abi_version, LUMINAL_RUNTIME_FACTORY_ABI_VERSION);
  EXPECT_STREQ(factory->name, "reference");
  EXPECT_STREQ(factory->device, "cpu");
  void* created = factory->create();
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(static_cast<runtime::Runtime*>(created)->name(), "reference");
  factory->destroy(created);
}

}  // namespace
}  // namespace luminal::testing
