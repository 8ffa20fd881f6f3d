// passes/gather_before_pointwise.h: a gather moved ahead of the pointwise ops it reads gives the
// same bits, leaves the ops' large result unread, and still raises for an index out of range.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.h"
#include "passes/dead_code.h"
#include "passes/gather_before_pointwise.h"

namespace luminal::testing {
namespace {

// log_softmax over the rows of [rows, classes], then one class a row gathered (a cross entropy's
// log-probabilities); the index is an input.
struct LogProbGather {
  IrTestBuilder b;
  ir::Shape rows_classes;

  LogProbGather(int64_t rows, int64_t classes, int64_t picked = 1) : rows_classes{rows, classes} {
    TensorRef x = b.input("x", DType::F32, rows_classes);
    TensorRef index = b.input("index", DType::I64, {rows, picked});
    TensorRef max = viewed(b.reduce(Op::MaxReduce, x, 1), ir::View({rows, classes}, {1, 0}, 0));
    TensorRef shifted = b.binary(Op::Sub, x, max);
    TensorRef sum = b.reduce(Op::SumReduce, b.unary(Op::Exp, shifted), 1);
    TensorRef log_sum = viewed(b.unary(Op::Log, sum), ir::View({rows, classes}, {1, 0}, 0));
    b.output(b.gather(b.binary(Op::Sub, shifted, log_sum), index, 1));
  }

  // Nodes of the whole [rows, classes] shape that `graph` computes, beyond the input.
  int64_t full_size_nodes(const ir::Graph& graph) const {
    int64_t count = 0;
    for (const ir::Node& node : graph.nodes()) count += node.op != Op::Input && node.shape == rows_classes;
    return count;
  }
};

TEST(GatherBeforePointwise, LogSoftmaxsLastSubIsGatheredInsteadOfComputedForEveryClass) {
  LogProbGather g(5, 40);
  const ir::Graph moved = passes::eliminate_dead_code(passes::move_gathers_before_pointwise(g.b.graph));
  ir::verify(moved);
  EXPECT_EQ(g.full_size_nodes(g.b.graph), 3);  // shifted, its exp, the log-probabilities
  EXPECT_EQ(g.full_size_nodes(moved), 2);      // shifted and its exp, which the sum reads
  int gathers = 0;
  for (const ir::Node& node : moved.nodes()) gathers += node.op == Op::Gather;
  EXPECT_EQ(gathers, 3);  // x, its row max and its row log-sum, each through the index

  std::mt19937 rng(7);
  std::vector<HostTensor> inputs = {random_tensor(DType::F32, {5, 40}, rng),
                                    HostTensor::of<int64_t>(DType::I64, {5, 1}, {0, 39, 17, 3, 22})};
  const std::vector<HostTensor> before = run_executable(*compile_reference(g.b.graph), g.b.graph, inputs);
  const std::vector<HostTensor> after = run_executable(*compile_reference(moved), moved, inputs);
  const std::vector<HostTensor> cpu = run_executable(*compile_cpu(g.b.graph), g.b.graph, inputs);
  EXPECT_EQ(before[0].values<float>(), after[0].values<float>());  // the same ops on the same values
  // The cpu runtime sums in float where the reference sums in double.
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(before[0].values<float>()[i], cpu[0].values<float>()[i], 1e-5) << i;
}

TEST(GatherBeforePointwise, AnIndexOutOfRangeStillRaises) {
  LogProbGather g(3, 40);
  std::mt19937 rng(1);
  std::vector<HostTensor> inputs = {random_tensor(DType::F32, {3, 40}, rng),
                                    HostTensor::of<int64_t>(DType::I64, {3, 1}, {0, 40, 2})};
  std::unique_ptr<runtime::Executable> cpu = compile_cpu(g.b.graph);
  EXPECT_NE(user_error_of([&] { run_executable(*cpu, g.b.graph, inputs); }), "(no UserError)");
}

TEST(GatherBeforePointwise, AGatherOfMostOfTheElementsStaysWhereItIs) {
  LogProbGather g(5, 8, 4);  // half of each row: the moved ops would cost what they save
  const ir::Graph moved = passes::eliminate_dead_code(passes::move_gathers_before_pointwise(g.b.graph));
  EXPECT_EQ(g.full_size_nodes(moved), 3);
}

TEST(GatherBeforePointwise, AnOperandReadTwiceIsGatheredOnce) {
  IrTestBuilder b;
  TensorRef x = b.input("x", DType::F32, {4, 64});
  TensorRef index = b.input("index", DType::I64, {4, 2});
  b.output(b.gather(b.binary(Op::Mul, x, x), index, 1));
  const ir::Graph moved = passes::eliminate_dead_code(passes::move_gathers_before_pointwise(b.graph));
  ir::verify(moved);
  int gathers = 0;
  for (const ir::Node& node : moved.nodes()) gathers += node.op == Op::Gather;
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(moved.node(moved.outputs()[0].node).op, Op::Mul);
}

}  // namespace
}  // namespace luminal::testing
