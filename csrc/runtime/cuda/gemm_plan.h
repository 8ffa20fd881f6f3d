// How one Matmul step maps onto cuBLASLt calls, decided from its operands' strides for one
// call's symbol values: plain arithmetic, no CUDA, so it is unit-tested without a GPU.
//
// cuBLASLt is column-major. A row-major product out[M, N] = a[M, K] x b[K, N] is computed as
// out^T[N, M] = b^T[N, K] x a^T[K, M]: cuBLASLt's first operand is b, its second a, and a
// row-major matrix with row stride ld is the column-major transpose with leading dimension ld.
// An operand whose last two dims have no unit stride (or overlapping rows) is packed first.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/cpu/gemm.h"

namespace luminal::runtime::cuda {

// A view's shape, strides (elements) and offset for one call, as the CPU's BLAS calls take it.
using OperandLayout = cpu::StridedLayout;

// A matrix as cuBLASLt stores it: column-major, rows x cols with leading dimension ld, used
// transposed or not.
struct LtMatrix {
  bool transpose = false;
  int64_t rows = 0, cols = 0, ld = 0;
};

// The transpose of a row-major view [rows, cols] with these strides, in cuBLASLt's terms, or
// nullopt when cuBLASLt cannot read it in place (no unit stride, or rows that overlap).
std::optional<LtMatrix> lt_transposed(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

struct GemmPlan {
  int64_t m = 0, n = 0, k = 0;
  LtMatrix a, b;          // a^T and b^T as cuBLASLt reads them
  int64_t batch = 1;      // cuBLASLt's strided batch count
  int64_t a_batch_stride = 0, b_batch_stride = 0, out_batch_stride = 0;  // elements
  // One cuBLASLt call per entry: the element offsets of a, b and out (batch dims that do not
  // collapse into the strided batch become separate calls).
  struct Call {
    int64_t a = 0, b = 0, out = 0;
  };
  std::vector<Call> calls;
};

// Whether cuBLASLt reads every matrix of this operand in place.
bool lt_readable(const OperandLayout& operand);

// out (contiguous, a's batch dims + [M, N]) = a [.., M, K] x b [.., K, N], both lt_readable and
// of equal rank (b broadcast over a's batch dims with stride 0). Batch dims over which b does
// not vary and a's rows continue fold into M (a Linear over [B, S, K] is one GEMM). No calls
// when M, N or K is 0 (the caller zeroes `out` when only K is).
GemmPlan plan_gemm(const OperandLayout& a, const OperandLayout& b);

}  // namespace luminal::runtime::cuda
