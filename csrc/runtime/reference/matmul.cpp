// Batched matmul [..., M, K] x [..., K, N] -> [..., M, N], and the grouped matmul of MoE experts.
//
// f32/f64 go through OpenBLAS; a matrix whose strides BLAS can express (row- or column-major
// with a unit stride) is passed in place, any other view is packed first. f16/bf16 are widened
// to f32, multiplied with sgemm and rounded once, as torch's CPU matmul does. Integers and
// bool use a plain loop accumulating in int64 (wrapping).
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

using ir::DType;

// One matrix of one batch entry.
struct Matrix {
  const std::byte* data;
  DType dtype;
  int64_t offset;
  int64_t rows;
  int64_t cols;
  int64_t row_stride;
  int64_t col_stride;

  int64_t at(int64_t row, int64_t col) const { return offset + row * row_stride + col * col_stride; }
};

struct BlasLayout {
  CBLAS_TRANSPOSE transpose;
  int64_t leading_dim;
};

bool fits_blas_int(int64_t value) { return value <= INT_MAX; }

// How BLAS (row-major convention) can read the matrix in place, if it can. A dim of size 1
// never advances, so its stride does not matter.
std::optional<BlasLayout> blas_layout(const Matrix& m) {
  const int64_t min_row_ld = std::max<int64_t>(m.cols, 1);
  const int64_t min_col_ld = std::max<int64_t>(m.rows, 1);
  if (m.cols <= 1 || m.col_stride == 1) {
    const int64_t ld = m.rows <= 1 ? min_row_ld : m.row_stride;
    if (ld >= min_row_ld && fits_blas_int(ld)) return BlasLayout{CblasNoTrans, ld};
  }
  if (m.rows <= 1 || m.row_stride == 1) {
    const int64_t ld = m.cols <= 1 ? min_col_ld : m.col_stride;
    if (ld >= min_col_ld && fits_blas_int(ld)) return BlasLayout{CblasTrans, ld};
  }
  return std::nullopt;
}

template <typename T>
std::vector<T> pack_row_major(const Matrix& m) {
  std::vector<T> packed(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c)
      packed[static_cast<size_t>(r * m.cols + c)] = static_cast<T>(load_float(m.data, m.dtype, m.at(r, c)));
  return packed;
}

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::F32 : DType::F64;
}

// A BLAS-ready operand: in place when the dtype and strides allow, else packed into `storage`.
template <typename T>
const T* blas_operand(const Matrix& m, std::vector<T>& storage, BlasLayout& layout) {
  if (m.dtype == dtype_of<T>()) {
    if (auto in_place = blas_layout(m)) {
      layout = *in_place;
      return reinterpret_cast<const T*>(m.data) + m.offset;
    }
  }
  storage = pack_row_major<T>(m);
  layout = BlasLayout{CblasNoTrans, std::max<int64_t>(m.cols, 1)};
  return storage.data();
}

void gemm(const BlasLayout& la, const BlasLayout& lb, int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, la.transpose, lb.transpose, m, n, k, 1.0f, a, static_cast<int>(la.leading_dim), b,
              static_cast<int>(lb.leading_dim), 0.0f, c, std::max(n, 1));
}

void gemm(const BlasLayout& la, const BlasLayout& lb, int m, int n, int k, const double* a, const double* b,
          double* c) {
  cblas_dgemm(CblasRowMajor, la.transpose, lb.transpose, m, n, k, 1.0, a, static_cast<int>(la.leading_dim), b,
              static_cast<int>(lb.leading_dim), 0.0, c, std::max(n, 1));
}

// c (contiguous M x N, of type T) = a x b, with K > 0.
template <typename T>
void blas_multiply(const Matrix& a, const Matrix& b, T* c) {
  std::vector<T> a_storage;
  std::vector<T> b_storage;
  BlasLayout a_layout{};
  BlasLayout b_layout{};
  const T* a_data = blas_operand(a, a_storage, a_layout);
  const T* b_data = blas_operand(b, b_storage, b_layout);
  gemm(a_layout, b_layout, static_cast<int>(a.rows), static_cast<int>(b.cols), static_cast<int>(a.cols), a_data,
       b_data, c);
}

// Writes one M x N product into the contiguous output at element `out_offset`.
void multiply_floats(const Matrix& a, const Matrix& b, std::byte* out, DType out_dtype, int64_t out_offset) {
  if (out_dtype == DType::F32) return blas_multiply(a, b, reinterpret_cast<float*>(out) + out_offset);
  if (out_dtype == DType::F64) return blas_multiply(a, b, reinterpret_cast<double*>(out) + out_offset);
  std::vector<float> product(static_cast<size_t>(a.rows * b.cols));
  blas_multiply(a, b, product.data());
  for (size_t i = 0; i < product.size(); ++i) store_float(out, out_dtype, out_offset + static_cast<int64_t>(i), product[i]);
}

void multiply_integers(const Matrix& a, const Matrix& b, std::byte* out, DType out_dtype, int64_t out_offset) {
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t c = 0; c < b.cols; ++c) {
      int64_t sum = 0;
      for (int64_t k = 0; k < a.cols; ++k)
        sum = wrapping_add(sum, wrapping_mul(load_int(a.data, a.dtype, a.at(r, k)), load_int(b.data, b.dtype, b.at(k, c))));
      store_int(out, out_dtype, out_offset + r * b.cols + c, sum);
    }
  }
}

// The leading (batch) dims of a layout, for walking batch entries.
Layout batch_part(const Layout& layout) {
  const size_t batch_rank = layout.shape.size() - 2;
  return Layout{{layout.shape.begin(), layout.shape.begin() + batch_rank},
                {layout.strides.begin(), layout.strides.begin() + batch_rank},
                layout.offset};
}

Matrix matrix_at(const Operand& operand, int64_t offset) {
  const size_t rank = operand.layout.shape.size();
  return Matrix{operand.data,
                operand.dtype,
                offset,
                operand.layout.shape[rank - 2],
                operand.layout.shape[rank - 1],
                operand.layout.strides[rank - 2],
                operand.layout.strides[rank - 1]};
}

void multiply(const KernelCall& call) {
  const Operand& a = call.inputs[0];
  const Operand& b = call.inputs[1];
  const size_t rank = call.shape.size();
  const int64_t rows = call.shape[rank - 2];
  const int64_t cols = call.shape[rank - 1];
  const int64_t inner = a.layout.shape[rank - 1];
  const DType dtype = call.node.dtype;
  UNSUPPORTED_CHECK(!ir::is_floating(dtype) || (fits_blas_int(rows) && fits_blas_int(cols) && fits_blas_int(inner)))
      << "matmul dims beyond BLAS's 32-bit range: " << rows << " x " << inner << " x " << cols;
  const Layout output = contiguous_layout(call.shape);
  const Layout batch_shape = batch_part(output);
  const Layout a_batches = batch_part(a.layout);
  const Layout b_batches = batch_part(b.layout);
  for_each_offset<3>(batch_shape.shape, {&batch_shape, &a_batches, &b_batches}, [&](const std::array<int64_t, 3>& at) {
    if (rows == 0 || cols == 0) return;
    if (inner == 0) {  // an empty sum; BLAS is not asked to special-case it
      for (int64_t i = 0; i < rows * cols; ++i) store_int(call.output, dtype, at[0] + i, 0);
      return;
    }
    const Matrix lhs = matrix_at(a, at[1]);
    const Matrix rhs = matrix_at(b, at[2]);
    if (ir::is_floating(dtype))
      multiply_floats(lhs, rhs, call.output, dtype, at[0]);
    else
      multiply_integers(lhs, rhs, call.output, dtype, at[0]);
  });
}

// The row range [begin, end) of each group, as transformers' grouped_mm_fallback slices it: each
// group starts where the previous offs entry ends, both clamped into [0, rows].
std::vector<std::pair<int64_t, int64_t>> group_row_ranges(const Operand& offs, int64_t rows) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t begin = 0;
  for (int64_t g = 0; g < offs.layout.shape[0]; ++g) {
    const int64_t end = std::clamp<int64_t>(
        load_int(offs.data, offs.dtype, offs.layout.offset + g * offs.layout.strides[0]), 0, rows);
    ranges.emplace_back(begin, end);
    begin = end;
  }
  return ranges;
}

void grouped_multiply(const KernelCall& call) {
  const Operand& a = call.inputs[0];
  const Operand& b = call.inputs[1];
  const int64_t rows = call.shape[0], cols = call.shape[1], inner = a.layout.shape[1];
  UNSUPPORTED_CHECK(fits_blas_int(rows) && fits_blas_int(cols) && fits_blas_int(inner))
      << "grouped matmul dims beyond BLAS's 32-bit range: " << rows << " x " << inner << " x " << cols;
  for (int64_t i = 0; i < rows * cols; ++i) store_float(call.output, call.node.dtype, i, 0.0);
  const std::vector<std::pair<int64_t, int64_t>> ranges = group_row_ranges(call.inputs[2], rows);
  for (size_t g = 0; g < ranges.size(); ++g) {
    const auto [begin, end] = ranges[g];
    if (end <= begin || cols == 0 || inner == 0) continue;
    const Matrix lhs{a.data, a.dtype, a.layout.offset + begin * a.layout.strides[0], end - begin, inner,
                     a.layout.strides[0], a.layout.strides[1]};
    const Matrix rhs{b.data, b.dtype, b.layout.offset + static_cast<int64_t>(g) * b.layout.strides[0], inner, cols,
                     b.layout.strides[1], b.layout.strides[2]};
    multiply_floats(lhs, rhs, call.output, call.node.dtype, begin * cols);
  }
}

}  // namespace

Kernel grouped_matmul_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(ir::is_floating(node.dtype) && graph.node(node.inputs[0].node).dtype == node.dtype &&
                 graph.node(node.inputs[1].node).dtype == node.dtype)
      << "grouped matmul operands must have the output's floating dtype, " << ir::dtype_name(node.dtype);
  return grouped_multiply;
}

Kernel matmul_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(node.shape.size() >= 2) << "matmul of rank " << node.shape.size();
  INTERNAL_CHECK(graph.node(node.inputs[0].node).dtype == node.dtype && graph.node(node.inputs[1].node).dtype == node.dtype)
      << "matmul operands must have the output dtype " << ir::dtype_name(node.dtype);
  return multiply;
}

}  // namespace luminal::runtime::reference
