#include "runtime/cuda/gemm_plan.h"

#include <algorithm>

#include "common/error.h"

namespace luminal::runtime::cuda {

std::optional<LtMatrix> lt_transposed(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  // Row-major in memory: as column-major it is the [cols, rows] transpose itself.
  if (cols <= 1 || col_stride == 1) {
    const int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
    if (ld >= std::max<int64_t>(cols, 1)) return LtMatrix{false, cols, rows, ld};
  }
  // Column-major in memory: cuBLASLt transposes it.
  if (rows <= 1 || row_stride == 1) {
    const int64_t ld = cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
    if (ld >= std::max<int64_t>(rows, 1)) return LtMatrix{true, rows, cols, ld};
  }
  return std::nullopt;
}

bool lt_readable(const OperandLayout& x) {
  const size_t rank = x.shape.size();
  INTERNAL_CHECK(rank >= 2) << "a GEMM operand of rank " << rank;
  return lt_transposed(x.shape[rank - 2], x.shape[rank - 1], x.strides[rank - 2], x.strides[rank - 1]).has_value();
}

GemmPlan plan_gemm(const OperandLayout& a, const OperandLayout& b) {
  const size_t rank = a.shape.size();
  INTERNAL_CHECK(rank >= 2 && b.shape.size() == rank) << "GEMM operands of ranks " << rank << " and " << b.shape.size();
  GemmPlan plan;
  plan.m = a.shape[rank - 2];
  plan.k = a.shape[rank - 1];
  plan.n = b.shape[rank - 1];
  std::vector<int64_t> batch(a.shape.begin(), a.shape.end() - 2);
  int64_t a_row_stride = a.strides[rank - 2];
  // Fold trailing batch dims into M where b does not vary over them and a's rows continue.
  while (!batch.empty()) {
    const size_t d = batch.size() - 1;
    if (!(b.strides[d] == 0 || b.shape[d] == 1)) break;
    if (batch[d] == 1) {
    } else if (plan.m == 1) {
      a_row_stride = a.strides[d];
      plan.m = batch[d];
    } else if (a.strides[d] == plan.m * a_row_stride) {
      plan.m *= batch[d];
    } else {
      break;
    }
    batch.pop_back();
  }
  if (plan.m == 0 || plan.n == 0 || plan.k == 0) return plan;
  const std::optional<LtMatrix> at = lt_transposed(plan.m, plan.k, a_row_stride, a.strides[rank - 1]);
  const std::optional<LtMatrix> bt = lt_transposed(plan.k, plan.n, b.strides[rank - 2], b.strides[rank - 1]);
  INTERNAL_CHECK(at && bt) << "plan_gemm on an operand cuBLASLt cannot read; pack it first";
  plan.a = *at;
  plan.b = *bt;

  // Batch dims, innermost first: the innermost non-unit one is cuBLASLt's strided batch, and
  // each outer dim joins it while a, b and out all step through it as one dim.
  std::vector<int64_t> sizes, a_steps, b_steps, out_steps;
  int64_t out_stride = plan.m * plan.n;
  for (size_t d = batch.size(); d-- > 0;) {
    const int64_t bs = b.shape[d] == 1 ? 0 : b.strides[d];
    if (batch[d] != 1) {
      const bool joins = !sizes.empty() && a.strides[d] == a_steps.back() * sizes.back() &&
                         bs == b_steps.back() * sizes.back() && out_stride == out_steps.back() * sizes.back() &&
                         sizes.size() == 1;
      if (joins) {
        sizes.back() *= batch[d];
      } else {
        sizes.push_back(batch[d]);
        a_steps.push_back(a.strides[d]);
        b_steps.push_back(bs);
        out_steps.push_back(out_stride);
      }
    }
    out_stride *= batch[d];
  }
  if (!sizes.empty()) {
    plan.batch = sizes[0];
    plan.a_batch_stride = a_steps[0];
    plan.b_batch_stride = b_steps[0];
    plan.out_batch_stride = out_steps[0];
  }
  // The outer dims, one call per index.
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    GemmPlan::Call call{a.offset, b.offset, 0};
    for (size_t i = 1; i < sizes.size(); ++i) {
      call.a += index[i] * a_steps[i];
      call.b += index[i] * b_steps[i];
      call.out += index[i] * out_steps[i];
    }
    plan.calls.push_back(call);
    size_t i = 1;
    for (; i < sizes.size(); ++i) {
      if (++index[i] < sizes[i]) break;
      index[i] = 0;
    }
    if (i >= sizes.size()) break;
  }
  return plan;
}

}  // namespace luminal::runtime::cuda
