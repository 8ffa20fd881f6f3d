// The CUDA runtime's decisions that need no GPU: how a matmul's strides map onto cuBLASLt
// calls, how strided copies collapse, which steps are library calls or host steps, where CUDA
// graph segments break, and that a StaticCache update is planned in place. The runtime's runs
// are tested on a GPU by tests/cuda/test_cuda_runtime.py.
#include <gtest/gtest.h>

#ifdef LUMINAL_WITH_CUDA

#include "ir_test_builder.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/strided_copy.h"

namespace luminal::testing {
namespace {

using ir::Expr;
using runtime::cuda::GemmPlan;
using runtime::cuda::OperandLayout;
using runtime::cuda::ProgramStep;

OperandLayout dense(std::vector<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * shape[d + 1];
  return OperandLayout{std::move(shape), std::move(strides), 0};
}

TEST(CudaGemmPlan, RowMajorIsTheColumnMajorTransposeAndColumnMajorIsTransposed) {
  // a [4, 8] row-major: as column-major it is the [8, 4] transpose, leading dim 8, not transposed.
  auto row = runtime::cuda::lt_transposed(4, 8, 8, 1);
  ASSERT_TRUE(row);
  EXPECT_FALSE(row->transpose);
  EXPECT_EQ(row->rows, 8);
  EXPECT_EQ(row->cols, 4);
  EXPECT_EQ(row->ld, 8);
  // A Linear weight [N, K] seen as b = w.t() [K, N]: strides (1, K): column-major, used transposed.
  auto column = runtime::cuda::lt_transposed(16, 32, 1, 16);
  ASSERT_TRUE(column);
  EXPECT_TRUE(column->transpose);
  EXPECT_EQ(column->rows, 16);
  EXPECT_EQ(column->cols, 32);
  EXPECT_EQ(column->ld, 16);
  // No unit stride, or rows that overlap: cuBLASLt cannot read it in place.
  EXPECT_FALSE(runtime::cuda::lt_transposed(4, 8, 16, 2));
  EXPECT_FALSE(runtime::cuda::lt_transposed(4, 8, 4, 1));
  EXPECT_FALSE(runtime::cuda::lt_readable(OperandLayout{{2, 4, 8}, {64, 16, 2}, 0}));
}

TEST(CudaGemmPlan, ALinearOverBatchAndSequenceIsOneGemm) {
  // x [2, 5, 16] x w.t() [16, 32] broadcast over the batch (stride 0).
  const GemmPlan plan = runtime::cuda::plan_gemm(dense({2, 5, 16}), OperandLayout{{2, 16, 32}, {0, 1, 16}, 0});
  EXPECT_EQ(plan.m, 10);
  EXPECT_EQ(plan.n, 32);
  EXPECT_EQ(plan.k, 16);
  EXPECT_EQ(plan.batch, 1);
  ASSERT_EQ(plan.calls.size(), 1u);
  EXPECT_TRUE(plan.b.transpose);
}

TEST(CudaGemmPlan, AttentionHeadsAreOneStridedBatch) {
  // q [2, 4, 6, 8] x k^T [2, 4, 8, 6] (k stored [2, 4, 6, 8]): batch dims 2 x 4 collapse into 8.
  const GemmPlan plan =
      runtime::cuda::plan_gemm(dense({2, 4, 6, 8}), OperandLayout{{2, 4, 8, 6}, {192, 48, 1, 8}, 0});
  EXPECT_EQ(plan.batch, 8);
  EXPECT_EQ(plan.a_batch_stride, 48);
  EXPECT_EQ(plan.b_batch_stride, 48);
  EXPECT_EQ(plan.out_batch_stride, 36);
  EXPECT_EQ(plan.calls.size(), 1u);
}

TEST(CudaGemmPlan, GroupedQueryHeadsFoldIntoRows) {
  // GQA: b repeats each of 2 kv heads for 3 query heads (stride 0 on the inner head dim), and
  // a's rows continue across those heads: one GEMM of 12 rows per kv head, all 4 one batch.
  const OperandLayout b{{2, 2, 3, 8, 5}, {80, 40, 0, 5, 1}, 7};
  const GemmPlan plan = runtime::cuda::plan_gemm(dense({2, 2, 3, 4, 8}), b);
  EXPECT_EQ(plan.m, 12);
  EXPECT_EQ(plan.batch, 4);
  EXPECT_EQ(plan.a_batch_stride, 96);
  EXPECT_EQ(plan.b_batch_stride, 40);
  EXPECT_EQ(plan.out_batch_stride, 60);
  ASSERT_EQ(plan.calls.size(), 1u);
  EXPECT_EQ(plan.calls[0].b, 7);
}

TEST(CudaGemmPlan, BatchDimsThatDoNotCollapseBecomeCalls) {
  // a's outer batch dim is padded (stride 100, not 2 x 32): one strided batch of 2 per index.
  const GemmPlan plan = runtime::cuda::plan_gemm(OperandLayout{{3, 2, 4, 8}, {100, 32, 8, 1}, 0}, dense({3, 2, 8, 5}));
  EXPECT_EQ(plan.batch, 2);
  ASSERT_EQ(plan.calls.size(), 3u);
  EXPECT_EQ(plan.calls[1].a, 100);
  EXPECT_EQ(plan.calls[1].b, 80);
  EXPECT_EQ(plan.calls[1].out, 40);
  EXPECT_EQ(plan.calls[2].out, 80);
}

TEST(CudaGemmPlan, EmptyProductsHaveNoCalls) {
  EXPECT_TRUE(runtime::cuda::plan_gemm(dense({3, 0}), dense({0, 4})).calls.empty());
  EXPECT_TRUE(runtime::cuda::plan_gemm(dense({0, 5}), dense({5, 4})).calls.empty());
}

TEST(CudaStridedCopy, DimsThatOneStrideWalksMerge) {
  // A permuted [2, 3, 4] view with strides (4, 8, 1): nothing merges.
  auto permuted = runtime::cuda::copy_layout({2, 3, 4}, {4, 8, 1});
  EXPECT_EQ(permuted.rank, 3);
  EXPECT_FALSE(runtime::cuda::is_dense_layout(permuted));
  // Contiguous with size-1 dims: one dim, dense.
  auto contiguous = runtime::cuda::copy_layout({1, 6, 1, 5}, {30, 5, 5, 1});
  EXPECT_EQ(contiguous.rank, 1);
  EXPECT_EQ(contiguous.shape[0], 30);
  EXPECT_TRUE(runtime::cuda::is_dense_layout(contiguous));
  // A slice of rows [4 of 10, 8]: two dims, not dense.
  auto rows = runtime::cuda::copy_layout({4, 8}, {16, 1});
  EXPECT_EQ(rows.rank, 2);
  EXPECT_FALSE(runtime::cuda::is_dense_layout(rows));
  // Eleven dims that cannot merge exceed the kernel's rank.
  std::vector<int64_t> shape(11, 2), strides;
  for (int d = 0; d < 11; ++d) strides.push_back(int64_t{1} << (2 * (10 - d)));
  EXPECT_THROW(runtime::cuda::copy_layout(shape, strides), InternalError);
}

TEST(CudaProgram, GemmsAreDeviceStepsAndSegmentsBreakAtHostSteps) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {Expr::symbol("s0"), 16});
  auto w = b.weight("w", DType::F32, {16, 32});
  auto h = b.unary(Op::Exp, b.matmul(x, w));
  auto groups = b.input("offs", DType::I64, {2});
  auto experts = b.weight("experts", DType::F32, {2, 32, 8});
  b.output(b.unary(Op::Neg, b.grouped_matmul(h, experts, groups)));
  passes::PassContext cx;
  const runtime::cuda::CudaProgram program = runtime::cuda::build_cuda_program(b.graph, cx);
  std::vector<ProgramStep::Kind> kinds;
  for (const ProgramStep& s : program.steps) kinds.push_back(s.kind);
  ASSERT_EQ(kinds, (std::vector<ProgramStep::Kind>{ProgramStep::Kind::Gemm, ProgramStep::Kind::Kernel,
                                                   ProgramStep::Kind::GroupedGemm, ProgramStep::Kind::Kernel}));
  EXPECT_FALSE(program.steps[0].host);
  EXPECT_TRUE(program.steps[2].host) << "a grouped GEMM reads its group sizes on the host";
  ASSERT_EQ(program.segments.size(), 2u);
  EXPECT_EQ(program.segments[0].begin, 0u);
  EXPECT_EQ(program.segments[0].end, 2u);
  EXPECT_EQ(program.segments[1].begin, 3u);
  EXPECT_EQ(program.segments[1].end, 4u);
  EXPECT_EQ(program.kernel_count, 2u);
}

TEST(CudaProgram, AStaticCacheUpdateIsPlannedInPlace) {
  IrTestBuilder b;
  auto cache = b.input("cache", DType::F32, {6, 4});
  auto index = b.input("index", DType::I64, {1, 4});
  auto row = b.input("row", DType::F32, {1, 4});
  auto updated = b.scatter(cache, index, row, 0, false);
  b.output(updated);
  b.output(b.reduce(Op::SumReduce, updated, 0));
  passes::PassContext cx;
  const runtime::cuda::CudaProgram program = runtime::cuda::build_cuda_program(b.graph, cx);
  ASSERT_EQ(program.in_place.size(), 1u);
  EXPECT_EQ(program.in_place[0].output, 0);
  EXPECT_EQ(program.in_place[0].data_slot, program.slot_of_node[cache.node]);
  EXPECT_EQ(program.segments.size(), 1u) << "scatter and reduction replay as one graph";
}

TEST(CudaProgram, ADataDependentSizeEndsTheSegmentWhereItIsRead) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {8});
  auto total = b.reduce(Op::SumReduce, b.unary(Op::Exp, x), 0);
  b.output(b.unary(Op::Neg, total));
  passes::PassContext cx;
  const runtime::cuda::CudaProgram program = runtime::cuda::build_cuda_program(b.graph, cx);
  EXPECT_TRUE(program.symbol_reads.empty());
  for (const ProgramStep& s : program.steps) EXPECT_FALSE(s.host);
}

// x [4, 16] x w [16, 32] + bias [32] broadcast over the rows, then `then` applied to the sum.
runtime::cuda::CudaProgram linear_program(Op then, bool bias_is_matrix = false) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 16});
  auto product = b.matmul(x, b.weight("w", DType::F32, {16, 32}));
  auto bias = bias_is_matrix ? b.weight("bias", DType::F32, {4, 32})
                             : viewed(b.weight("bias", DType::F32, {1, 32}), ir::View::contiguous({1, 32}).expand({4, 32}));
  auto sum = b.binary(Op::Add, product, bias);
  b.output(then == Op::Add ? sum : b.unary(then, sum));
  passes::PassContext cx;
  return runtime::cuda::build_cuda_program(b.graph, cx);
}

TEST(CudaProgram, ALinearsBiasIsTheGemmsEpilogue) {
  const runtime::cuda::CudaProgram program = linear_program(Op::Add);
  ASSERT_EQ(program.steps.size(), 1u) << "the bias add kernel is folded into the GEMM";
  const ProgramStep& gemm = program.steps[0];
  EXPECT_EQ(gemm.kind, ProgramStep::Kind::Gemm);
  ASSERT_GE(gemm.bias_add, 0);
  EXPECT_EQ(gemm.slots.size(), 4u);
  EXPECT_EQ(gemm.slots[2], program.slot_of_node[gemm.bias_add]) << "the GEMM writes the sum's buffer";
  EXPECT_EQ(program.bias_epilogues, 1u);
  EXPECT_EQ(program.kernel_count, 0u);
}

TEST(CudaProgram, ABiasAddFusedWithMoreStaysAKernel) {
  // add + exp is one fused kernel: the epilogue would need both, so the GEMM stays plain.
  const runtime::cuda::CudaProgram fused = linear_program(Op::Exp);
  EXPECT_EQ(fused.bias_epilogues, 0u);
  EXPECT_EQ(fused.steps.size(), 2u);
  EXPECT_LT(fused.steps[0].bias_add, 0);
  // A full matrix added is not a bias vector.
  EXPECT_EQ(linear_program(Op::Add, true).bias_epilogues, 0u);
}

}  // namespace
}  // namespace luminal::testing

#endif  // LUMINAL_WITH_CUDA
