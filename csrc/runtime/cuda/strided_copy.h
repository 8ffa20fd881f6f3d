// Copies a strided view of device memory into a dense buffer: what the CUDA runtime needs
// besides generated kernels to materialise a caller's non-contiguous input, to write a graph
// output read through a view, and to pack a GEMM operand that cuBLASLt cannot read in place.
// One small kernel per element size (a copy never looks at values), compiled with NVRTC once
// per process and architecture like the generated kernels.
#pragma once


#include <cstdint>
#include <string>
#include <vector>

namespace luminal::runtime::cuda {

// The most dims a copied view may have (more than any aten op produces).
inline constexpr int kMaxCopyRank = 8;

// The CUDA source of the copy kernels, `lm_strided_copy_<bytes>` for 1, 2, 4 and 8-byte
// elements; they take (const T* src, T* dst, lm_copy_layout layout, int64_t count).
const std::string& strided_copy_source();
std::string strided_copy_kernel_name(size_t element_bytes);

// The shape and strides (in elements) a copy walks; passed to the kernel by value.
struct CopyLayout {
  int64_t shape[kMaxCopyRank] = {};
  int64_t strides[kMaxCopyRank] = {};
  int32_t rank = 0;
};

// Collapses dims that a single stride walks (and drops size-1 dims) so that a copy of any rank
// torch produces fits kMaxCopyRank; InternalError if it still does not.
CopyLayout copy_layout(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

// Whether the view is the dense row-major layout of its shape (the copy is one memcpy).
bool is_dense_layout(const CopyLayout& layout);

}  // namespace luminal::runtime::cuda
