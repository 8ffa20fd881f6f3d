// Data symbols: sizes read from tensor data during the run (nonzero's row count, a `.item()`
// used as a size), and the program's assertions on symbols. Both runtimes bind a data symbol
// once its value is computed, plan and allocate what it sizes only then, and allocate outputs
// it sizes through the caller's allocator.
#include <gtest/gtest.h>

#include "common/error.h"
#include "cpu_test_util.h"
#include "passes/fusion/fuse.h"
#include "passes/fusion/partition.h"

namespace luminal::testing {
namespace {

using ir::Expr;

// "a <= b" as an expression that is 1 when it holds and 0 when not (the translator's encoding).
Expr at_most(const Expr& a, const Expr& b) {
  return Expr(int64_t{1}) - min(max(a - b, Expr(int64_t{0})), Expr(int64_t{1}));
}

// count = the number of nonzeros of x [n] (i64 [1]); u0 is bound from it.
struct CountGraph {
  IrTestBuilder b;
  TensorRef x;
  TensorRef count;
  Expr u0 = Expr::symbol("u0");

  explicit CountGraph(int64_t n) {
    x = b.input("x", DType::I64, {n});
    auto zero = b.constant(ir::Scalar::of_int(0), DType::I64, {n});
    auto nonzero = b.unary(Op::Cast, b.binary(Op::Ne, x, zero), DType::I64);
    count = b.reduce(Op::SumReduce, nonzero, 0);
    b.graph.add_data_symbol(ir::DataSymbol{"u0", count, "test nonzero"});
  }
};

HostTensor int_input(const std::vector<int64_t>& values) {
  return HostTensor::of<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values);
}

TEST(DataSymbols, SizesReadFromDataMatchTheReference) {
  CountGraph g(6);
  IrTestBuilder& b = g.b;
  // A pointwise kernel over [u0], a prefix view of the input, a BLAS product with u0 rows and a
  // reduction over an axis of length u0.
  auto iota = b.iota(0, DType::I64, {g.u0});
  b.output(b.binary(Op::Mul, iota, b.constant(ir::Scalar::of_int(2), DType::I64, {g.u0})));
  b.output(viewed(g.x, g.x.view.slice(0, Expr(int64_t{0}), g.u0, 1)));
  auto rows = b.unary(Op::Cast, b.iota(0, DType::I64, {g.u0, 3}), DType::F32);
  auto w = b.input("w", DType::F32, {3, 2});
  b.output(b.matmul(rows, w));
  b.output(b.reduce(Op::SumReduce, iota, 0));
  const HostTensor weights = HostTensor::of<float>(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{0, 0, 0, 0, 0, 0}, {0, 7, 0, 0, 0, 0},
                                        {3, 0, -1, 0, 2, 0}, {1, 2, 3, 4, 5, 6}}) {
    int64_t count = 0;
    for (int64_t v : x) count += v != 0;
    expect_matches_reference(b.graph, {int_input(x), weights}, "count " + std::to_string(count));
    std::vector<HostTensor> inputs = {int_input(x), weights};
    const auto out = run_executable(*compile_cpu(b.graph), b.graph, inputs);
    ASSERT_EQ(out[0].sizes, std::vector<int64_t>{count});
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(out[0].values<int64_t>()[i], 2 * i);
    EXPECT_EQ(out[1].values<int64_t>(), std::vector<int64_t>(x.begin(), x.begin() + count));
    ASSERT_EQ(out[2].sizes, (std::vector<int64_t>{count, 2}));
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(out[2].values<float>()[2 * i], static_cast<float>(9 * i));
    EXPECT_EQ(out[3].values<int64_t>()[0], count * (count - 1) / 2);
  }
}

TEST(DataSymbols, OutputShapesAreUnknownBeforeTheRun) {
  CountGraph g(3);
  g.b.output(g.b.iota(0, DType::I64, {g.u0}));
  g.b.output(g.count);
  HostTensor x = int_input({1, 0, 1});
  for (const auto& exe : {compile_reference(g.b.graph), compile_cpu(g.b.graph)}) {
    const runtime::OutputShapes shapes = exe->output_shapes({x.ref()});
    EXPECT_FALSE(shapes[0].has_value());
    ASSERT_TRUE(shapes[1].has_value());
    EXPECT_EQ(*shapes[1], std::vector<int64_t>{1});
  }
}

TEST(DataSymbols, FailedAssertionRaisesItsMessage) {
  CountGraph g(4);
  g.b.graph.add_assertion(ir::SymbolAssertion{at_most(g.u0, Expr(int64_t{3})), "Runtime assertion failed for u0 <= 3"});
  g.b.output(g.b.iota(0, DType::I64, {g.u0}));
  for (const auto& exe : {compile_reference(g.b.graph), compile_cpu(g.b.graph)}) {
    std::vector<HostTensor> ok = {int_input({1, 1, 0, 1})};
    EXPECT_EQ(run_executable(*exe, g.b.graph, ok)[0].sizes, std::vector<int64_t>{3});
    std::vector<HostTensor> bad = {int_input({1, 1, 1, 1})};
    EXPECT_NE(user_error_of([&] { run_executable(*exe, g.b.graph, bad); })
                  .find("Runtime assertion failed for u0 <= 3 (u0=4)"),
              std::string::npos);
  }
}

TEST(DataSymbols, AssertionOnInputSymbolsIsCheckedWhenBinding) {
  IrTestBuilder b;
  const Expr s = Expr::symbol("s0");
  auto x = b.input("x", DType::F32, {s});
  b.graph.add_assertion(ir::SymbolAssertion{at_most(s, Expr(int64_t{4})), "s0 must be at most 4"});
  b.output(b.unary(Op::Neg, x));
  std::mt19937 rng(1);
  for (const auto& exe : {compile_reference(b.graph), compile_cpu(b.graph)}) {
    HostTensor small = random_tensor(DType::F32, {4}, rng);
    EXPECT_NO_THROW(exe->output_shapes({small.ref()}));
    HostTensor large = random_tensor(DType::F32, {5}, rng);
    EXPECT_NE(user_error_of([&] { exe->output_shapes({large.ref()}); }).find("s0 must be at most 4 (s0=5)"),
              std::string::npos);
  }
}

// A value read straight from an input (a `.item()` of an i64 input used as a size), at an offset.
TEST(DataSymbols, ValueReadFromAnInputAndNegativeValues) {
  IrTestBuilder b;
  auto x = b.input("x", DType::I64, {3});
  b.graph.add_data_symbol(ir::DataSymbol{"u0", viewed(x, x.view.slice(0, Expr(int64_t{1}), Expr(int64_t{2}), 1)),
                                         "test item"});
  b.output(b.iota(0, DType::F32, {Expr::symbol("u0")}));
  for (const auto& exe : {compile_reference(b.graph), compile_cpu(b.graph)}) {
    std::vector<HostTensor> inputs = {int_input({9, 5, 9})};
    const auto out = run_executable(*exe, b.graph, inputs);
    EXPECT_EQ(out[0].values<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
    std::vector<HostTensor> negative = {int_input({9, -2, 9})};
    EXPECT_NE(user_error_of([&] { run_executable(*exe, b.graph, negative); })
                  .find("the data-dependent size u0 (from test item) is -2 in this call; a size must not be negative"),
              std::string::npos);
  }
}

// count + x[u0]: a per-row epilogue of the count's row kernel by shape, but it reads x at an
// offset that is the count itself, so fusing it would need u0 inside the kernel computing it.
TEST(DataSymbols, FusionKeepsAValueApartFromTheKernelsItSizes) {
  CountGraph g(5);
  IrTestBuilder& b = g.b;
  auto at_count = viewed(g.x, ir::View({Expr(int64_t{1})}, {Expr(int64_t{1})}, g.u0));
  b.output(b.binary(Op::Add, g.count, at_count));
  auto iota = b.iota(0, DType::I64, {g.u0});
  auto below = b.binary(Op::Lt, iota, viewed(g.count, g.count.view.expand({g.u0})));
  b.output(b.unary(Op::Cast, below, DType::I64));
  passes::PassContext cx;
  const passes::Partition p = passes::fuse(b.graph, cx);
  const int count_group = p.group_of[g.count.node];
  const std::vector<int> order = passes::topological_groups(p);
  const auto position = [&](int group) { return std::find(order.begin(), order.end(), group) - order.begin(); };
  for (size_t id = g.count.node + 1; id < b.graph.size(); ++id) {
    const int group = p.group_of[id];
    if (group < 0) continue;
    EXPECT_NE(group, count_group) << "%" << id << " fused with the count";
    EXPECT_GT(position(group), position(count_group)) << "%" << id << " runs before the count";
  }
  expect_matches_reference(b.graph, {int_input({1, 0, 2, 0, 3})}, "count kept apart");
}

TEST(DataSymbols, VerifyRejectsMisplacedSymbols) {
  {
    IrTestBuilder b;
    auto x = b.input("x", DType::I64, {1});
    auto early = b.iota(0, DType::I64, {Expr::symbol("u0")});
    auto value = b.unary(Op::Neg, x);
    b.graph.add_data_symbol(ir::DataSymbol{"u0", value, "test"});
    b.output(early);
    EXPECT_THROW(ir::verify(b.graph), InternalError);
  }
  {
    IrTestBuilder b;
    auto x = b.input("x", DType::F32, {1});
    b.graph.add_data_symbol(ir::DataSymbol{"u0", x, "test"});
    EXPECT_THROW(ir::verify(b.graph), InternalError);  // not an i64 value
  }
}

}  // namespace
}  // namespace luminal::testing
