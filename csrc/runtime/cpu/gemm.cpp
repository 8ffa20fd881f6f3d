#include "runtime/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/half.h"

namespace luminal::runtime::cpu {

namespace {

struct Matrix {
  int64_t rows, cols, row_stride, col_stride;
};

struct BlasView {
  CBLAS_TRANSPOSE transpose;
  int64_t ld;
};

std::optional<BlasView> blas_view(const Matrix& m) {
  const int64_t min_row_ld = std::max<int64_t>(m.cols, 1);
  const int64_t min_col_ld = std::max<int64_t>(m.rows, 1);
  if (m.cols <= 1 || m.col_stride == 1) {
    const int64_t ld = m.rows <= 1 ? min_row_ld : m.row_stride;
    if (ld >= min_row_ld) return BlasView{CblasNoTrans, ld};
  }
  if (m.rows <= 1 || m.row_stride == 1) {
    const int64_t ld = m.cols <= 1 ? min_col_ld : m.col_stride;
    if (ld >= min_col_ld) return BlasView{CblasTrans, ld};
  }
  return std::nullopt;
}

template <typename T>
const T* operand(const T* data, const Matrix& m, std::vector<T>& storage, BlasView& view) {
  if (auto v = blas_view(m)) {
    view = *v;
    return data;
  }
  storage.resize(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) storage[r * m.cols + c] = data[r * m.row_stride + c * m.col_stride];
  view = BlasView{CblasNoTrans, std::max<int64_t>(m.cols, 1)};
  return storage.data();
}

// c's rows are ldc apart (a block of columns of a wider output).
void gemm(const BlasView& va, const BlasView& vb, int m, int n, int k, const float* a, const float* b, float* c,
          int ldc) {
  cblas_sgemm(CblasRowMajor, va.transpose, vb.transpose, m, n, k, 1.0f, a, static_cast<int>(va.ld), b,
              static_cast<int>(vb.ld), 0.0f, c, std::max(ldc, 1));
}
void gemm(const BlasView& va, const BlasView& vb, int m, int n, int k, const double* a, const double* b, double* c,
          int ldc) {
  cblas_dgemm(CblasRowMajor, va.transpose, vb.transpose, m, n, k, 1.0, a, static_cast<int>(va.ld), b,
              static_cast<int>(vb.ld), 0.0, c, std::max(ldc, 1));
}

// M = 1: GEMV. OpenBLAS's sgemm packs all of b first (a full extra pass over a weight that a
// decode step reads once); its gemv streams b once in either layout.
void gemv(const BlasView& vb, int n, int k, const float* x, int x_stride, const float* b, float* y) {
  if (vb.transpose == CblasNoTrans)  // b is row-major [k, n]: y = bᵀ x
    cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, b, static_cast<int>(vb.ld), x, x_stride, 0.0f, y, 1);
  else  // b's memory is row-major [n, k]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, b, static_cast<int>(vb.ld), x, x_stride, 0.0f, y, 1);
}
void gemv(const BlasView& vb, int n, int k, const double* x, int x_stride, const double* b, double* y) {
  if (vb.transpose == CblasNoTrans)
    cblas_dgemv(CblasRowMajor, CblasTrans, k, n, 1.0, b, static_cast<int>(vb.ld), x, x_stride, 0.0, y, 1);
  else
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0, b, static_cast<int>(vb.ld), x, x_stride, 0.0, y, 1);
}

// out (contiguous [ma.rows, mb.cols]) = ma x mb, with K > 0, its columns as `split` divides them;
// operands BLAS cannot read in place are packed into the storage vectors first.
template <typename T>
void product(const T* a, const Matrix& ma, const T* b, const Matrix& mb, T* out, std::vector<T>& a_storage,
             std::vector<T>& b_storage, const ColumnSplit& split) {
  BlasView va{}, vb{};
  const T* pa = operand(a, ma, a_storage, va);
  const T* pb = operand(b, mb, b_storage, vb);
  const auto columns = [&](int64_t begin, int64_t end) {
    // Column `begin` of b: `begin` elements into a row of [K, N], or `begin` rows into [N, K].
    const T* pb_block = pb + (vb.transpose == CblasNoTrans ? begin : begin * vb.ld);
    const int n = static_cast<int>(end - begin);
    if (ma.rows == 1) {
      // a is one row: its elements are 1 apart (NoTrans) or ld apart (Trans, a column view).
      const int x_stride = va.transpose == CblasNoTrans ? 1 : static_cast<int>(va.ld);
      gemv(vb, n, static_cast<int>(ma.cols), pa, x_stride, pb_block, out + begin);
    } else {
      gemm(va, vb, static_cast<int>(ma.rows), n, static_cast<int>(ma.cols), pa, pb_block, out + begin,
           static_cast<int>(mb.cols));
    }
  };
  if (split)
    split(ma.rows, mb.cols, ma.cols, columns);
  else
    columns(0, mb.cols);
}

template <typename T>
void batched(const T* a, const StridedLayout& al, const T* b, const StridedLayout& bl, T* out,
             const ColumnSplit& split) {
  const size_t rank = al.shape.size();
  const size_t batch_rank = rank - 2;
  int64_t m = al.shape[rank - 2];
  const int64_t k = al.shape[rank - 1];
  const int64_t n = bl.shape[rank - 1];
  std::vector<int64_t> batch(al.shape.begin(), al.shape.begin() + static_cast<long>(batch_rank));
  int64_t a_row_stride = al.strides[rank - 2];
  // Fold batch dims into M where b does not vary over them and a's rows continue across them.
  while (!batch.empty()) {
    const size_t d = batch.size() - 1;
    if (!(bl.strides[d] == 0 || bl.shape[d] == 1)) break;
    if (batch[d] == 1) {
    } else if (m == 1) {
      a_row_stride = al.strides[d];
      m = batch[d];
    } else if (al.strides[d] == m * a_row_stride) {
      m *= batch[d];
    } else {
      break;
    }
    batch.pop_back();
  }
  const size_t folded_rank = batch.size();
  if (m == 0 || n == 0) return;
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  if (k == 0) {
    std::memset(out, 0, static_cast<size_t>(count * m * n) * sizeof(T));
    return;
  }
  USER_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX) << "matmul dims beyond BLAS's 32-bit range";
  std::vector<int64_t> index(folded_rank, 0);
  std::vector<T> a_storage, b_storage;
  for (int64_t e = 0; e < count; ++e) {
    int64_t ao = al.offset, bo = bl.offset;
    for (size_t d = 0; d < folded_rank; ++d) {
      ao += index[d] * al.strides[d];
      bo += index[d] * bl.strides[d];
    }
    const Matrix ma{m, k, a_row_stride, al.strides[rank - 1]};
    const Matrix mb{k, n, bl.strides[rank - 2], bl.strides[rank - 1]};
    product(a + ao, ma, b + bo, mb, out + e * m * n, a_storage, b_storage, split);
    for (size_t d = folded_rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
}

// A half-precision matrix widened to f32 in its own memory order (column-major when its rows
// are the unit-stride dim, as a Linear weight seen transposed), so that the copy streams; `m`
// becomes the copy's description.
void widen(const uint16_t* data, Matrix& m, float (*to_float)(uint16_t), std::vector<float>& storage) {
  storage.resize(static_cast<size_t>(m.rows * m.cols));
  if (m.rows > 1 && m.row_stride == 1) {
    for (int64_t c = 0; c < m.cols; ++c)
      for (int64_t r = 0; r < m.rows; ++r) storage[c * m.rows + r] = to_float(data[r + c * m.col_stride]);
    m = Matrix{m.rows, m.cols, 1, m.rows};
  } else {
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t c = 0; c < m.cols; ++c) storage[r * m.cols + c] = to_float(data[r * m.row_stride + c * m.col_stride]);
    m = Matrix{m.rows, m.cols, m.cols, 1};
  }
}

// Packing and widening buffers, reused across the groups of one grouped matmul.
struct GroupScratch {
  std::vector<float> a_f32, b_f32, a_wide, b_wide, product_rows;
  std::vector<double> a_f64, b_f64;
};

// Group g's rows [begin, end) of a [S, K] times expert g of b [G, K, N], into the same rows of
// out [S, N].
template <typename T>
void group_product(const T* a, const StridedLayout& al, const T* b, const StridedLayout& bl, int64_t g, int64_t begin,
                   int64_t end, T* out, std::vector<T>& a_storage, std::vector<T>& b_storage,
                   const ColumnSplit& split) {
  const int64_t n = bl.shape[2];
  const Matrix ma{end - begin, al.shape[1], al.strides[0], al.strides[1]};
  const Matrix mb{bl.shape[1], n, bl.strides[1], bl.strides[2]};
  product(a + al.offset + begin * al.strides[0], ma, b + bl.offset + g * bl.strides[0], mb, out + begin * n,
          a_storage, b_storage, split);
}

// f16/bf16: the expert's weights and its rows are widened to f32 (never the experts no row is
// routed to), multiplied with sgemm and rounded once, as the reference runtime does.
void group_product_half(const uint16_t* a, const StridedLayout& al, const uint16_t* b, const StridedLayout& bl,
                        int64_t g, int64_t begin, int64_t end, uint16_t* out, bool bfloat, GroupScratch& scratch,
                        const ColumnSplit& split) {
  const int64_t n = bl.shape[2];
  float (*to_float)(uint16_t) = bfloat ? bf16_to_float : half_to_float;
  uint16_t (*from_float)(float) = bfloat ? float_to_bf16 : float_to_half;
  Matrix ma{end - begin, al.shape[1], al.strides[0], al.strides[1]};
  Matrix mb{bl.shape[1], n, bl.strides[1], bl.strides[2]};
  widen(a + al.offset + begin * al.strides[0], ma, to_float, scratch.a_wide);
  widen(b + bl.offset + g * bl.strides[0], mb, to_float, scratch.b_wide);
  std::vector<float>& rows = scratch.product_rows;
  rows.resize(static_cast<size_t>(ma.rows * n));
  product(scratch.a_wide.data(), ma, scratch.b_wide.data(), mb, rows.data(), scratch.a_f32, scratch.b_f32, split);
  for (size_t i = 0; i < rows.size(); ++i) out[begin * n + static_cast<int64_t>(i)] = from_float(rows[i]);
}

void group_product(ir::DType dtype, const void* a, const StridedLayout& al, const void* b, const StridedLayout& bl,
                   int64_t g, int64_t begin, int64_t end, void* out, GroupScratch& scratch, const ColumnSplit& split) {
  const int64_t k = al.shape[1], n = bl.shape[2];
  if (n == 0 || k == 0) return;  // out's rows stay as the caller zeroed them
  USER_CHECK(end - begin <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX)
      << "grouped matmul dims beyond BLAS's 32-bit range";
  switch (dtype) {
    case ir::DType::F32:
      return group_product(static_cast<const float*>(a), al, static_cast<const float*>(b), bl, g, begin, end,
                           static_cast<float*>(out), scratch.a_f32, scratch.b_f32, split);
    case ir::DType::F64:
      return group_product(static_cast<const double*>(a), al, static_cast<const double*>(b), bl, g, begin, end,
                           static_cast<double*>(out), scratch.a_f64, scratch.b_f64, split);
    case ir::DType::BF16:
    case ir::DType::F16:
      return group_product_half(static_cast<const uint16_t*>(a), al, static_cast<const uint16_t*>(b), bl, g, begin,
                                end, static_cast<uint16_t*>(out), dtype == ir::DType::BF16, scratch, split);
    default: INTERNAL_ERROR() << "grouped matmul of " << ir::dtype_name(dtype);
  }
}

}  // namespace

bool blas_sgemm_is_avx2() {
  const std::string core = openblas_get_corename();
  return core == "Haswell" || core == "Zen";
}

void blas_group_product(ir::DType dtype, const void* a, const StridedLayout& al, const void* b,
                        const StridedLayout& bl, int64_t g, int64_t begin, int64_t end, void* out,
                        const ColumnSplit& split) {
  GroupScratch scratch;
  group_product(dtype, a, al, b, bl, g, begin, end, out, scratch, split);
}

void blas_grouped_matmul(ir::DType dtype, const void* a, const StridedLayout& al, const void* b,
                         const StridedLayout& bl, const int64_t* offs, const StridedLayout& ol, void* out,
                         const ColumnSplit& split) {
  const int64_t rows = al.shape[0];
  std::memset(out, 0, static_cast<size_t>(rows * bl.shape[2]) * ir::dtype_size(dtype));
  GroupScratch scratch;
  for_each_row_group(offs, ol, rows, [&](int64_t g, int64_t begin, int64_t end) {
    group_product(dtype, a, al, b, bl, g, begin, end, out, scratch, split);
  });
}

void blas_matmul(ir::DType dtype, const void* a, const StridedLayout& al, const void* b, const StridedLayout& bl,
                 void* out, const ColumnSplit& split) {
  if (dtype == ir::DType::F32)
    return batched(static_cast<const float*>(a), al, static_cast<const float*>(b), bl, static_cast<float*>(out),
                   split);
  INTERNAL_CHECK(dtype == ir::DType::F64) << "BLAS matmul of " << ir::dtype_name(dtype);
  batched(static_cast<const double*>(a), al, static_cast<const double*>(b), bl, static_cast<double*>(out), split);
}

}  // namespace luminal::runtime::cpu
