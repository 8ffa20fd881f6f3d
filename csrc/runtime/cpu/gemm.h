// Batched f32/f64 GEMM, and MoE's grouped GEMM, through BLAS for the CPU runtime. Operands are
// read in place when BLAS can express their strides (row- or column-major with a unit stride),
// packed otherwise; batch dims that only repeat the weight (stride 0 on b, a's rows contiguous
// across the batch) fold into M, so a [B, S, K] x [K, N] linear layer is one call. A single row
// (M = 1) runs as GEMV.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/dtype.h"

namespace luminal::runtime::cpu {

struct StridedLayout {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// How each product's output columns [0, n) are computed: split(m, n, k, columns) calls
// columns(begin, end) for ranges that cover [0, n) once, on any threads, and returns when all are
// done. The cpu runtime splits them across the threads its kernels run on, each range one
// single-threaded BLAS call (BLAS's own threads beside that team's spinning workers put three
// busy threads on two cores: GPT-2's f32 decode ran 2.3x slower that way). Empty: one call, as
// BLAS threads it.
using ColumnSplit = std::function<void(int64_t m, int64_t n, int64_t k,
                                       const std::function<void(int64_t begin, int64_t end)>& columns)>;

// Whether OpenBLAS's sgemm runs its 256-bit kernels here (the core it picked at load time is one
// of its AVX2 ones, as 0.3.21 picks "Haswell" on a Zen 5): half the width of AVX-512's FMAs.
bool blas_sgemm_is_avx2();

// out (contiguous, shape = a's batch dims + [M, N]) = a [.., M, K] x b [.., K, N]; dtype f32 or f64.
void blas_matmul(ir::DType dtype, const void* a, const StridedLayout& a_layout, const void* b,
                 const StridedLayout& b_layout, void* out, const ColumnSplit& split = {});

// Calls `multiply(g, begin, end)` for each of GroupedMatmul's row groups that has rows, in order:
// group g's rows run from the previous group's end to offs[g], both clamped to [0, rows) (see
// GroupedMatmul in ir/ops.def).
template <typename Multiply>
void for_each_row_group(const int64_t* offs, const StridedLayout& offs_layout, int64_t rows, Multiply&& multiply) {
  int64_t begin = 0;
  for (int64_t g = 0; g < offs_layout.shape[0]; ++g) {
    const int64_t end = std::clamp<int64_t>(offs[offs_layout.offset + g * offs_layout.strides[0]], 0, rows);
    if (end > begin) multiply(g, begin, end);
    begin = end;
  }
}

// Rows [begin, end) of out (contiguous [S, N]) = the same rows of a [S, K] times expert g of
// b [G, K, N]: one group of blas_grouped_matmul.
void blas_group_product(ir::DType dtype, const void* a, const StridedLayout& a_layout, const void* b,
                        const StridedLayout& b_layout, int64_t g, int64_t begin, int64_t end, void* out,
                        const ColumnSplit& split = {});

// out (contiguous [S, N]) = the grouped product of a [S, K] and b [G, K, N] whose row groups end
// at offs (i64): GroupedMatmul in ir/ops.def. One BLAS call per expert with rows; f16/bf16 widen
// only those experts' weights to f32, and round the product once.
void blas_grouped_matmul(ir::DType dtype, const void* a, const StridedLayout& a_layout, const void* b,
                         const StridedLayout& b_layout, const int64_t* offs, const StridedLayout& offs_layout,
                         void* out, const ColumnSplit& split = {});

}  // namespace luminal::runtime::cpu
