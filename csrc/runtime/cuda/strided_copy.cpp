#include "runtime/cuda/strided_copy.h"

#include "common/error.h"

namespace luminal::runtime::cuda {

const std::string& strided_copy_source() {
  // Each thread computes its element's source offset from its dense index (grid-stride loop).
  static const std::string source = R"(typedef long long int64_t;
struct lm_copy_layout { int64_t shape[8]; int64_t strides[8]; int rank; };
template <typename T>
__device__ void lm_strided_copy(const T* __restrict__ src, T* __restrict__ dst, const lm_copy_layout& l,
                                int64_t count) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i, offset = 0;
    for (int d = l.rank - 1; d >= 0; --d) {
      offset += (rest % l.shape[d]) * l.strides[d];
      rest /= l.shape[d];
    }
    dst[i] = src[offset];
  }
}
extern "C" __global__ void lm_strided_copy_1(const unsigned char* s, unsigned char* d, lm_copy_layout l, int64_t n) {
  lm_strided_copy(s, d, l, n);
}
extern "C" __global__ void lm_strided_copy_2(const unsigned short* s, unsigned short* d, lm_copy_layout l, int64_t n) {
  lm_strided_copy(s, d, l, n);
}
extern "C" __global__ void lm_strided_copy_4(const unsigned int* s, unsigned int* d, lm_copy_layout l, int64_t n) {
  lm_strided_copy(s, d, l, n);
}
extern "C" __global__ void lm_strided_copy_8(const unsigned long long* s, unsigned long long* d, lm_copy_layout l,
                                             int64_t n) {
  lm_strided_copy(s, d, l, n);
}
)";
  return source;
}

std::string strided_copy_kernel_name(size_t element_bytes) {
  INTERNAL_CHECK(element_bytes == 1 || element_bytes == 2 || element_bytes == 4 || element_bytes == 8)
      << "no strided copy kernel for " << element_bytes << "-byte elements";
  return "lm_strided_copy_" + std::to_string(element_bytes);
}

CopyLayout copy_layout(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  std::vector<int64_t> sizes, steps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    // The previous kept dim and this one walk memory as one dim when its stride spans this one.
    if (!sizes.empty() && steps.back() == strides[d] * shape[d]) {
      sizes.back() *= shape[d];
      steps.back() = strides[d];
      continue;
    }
    sizes.push_back(shape[d]);
    steps.push_back(strides[d]);
  }
  INTERNAL_CHECK(sizes.size() <= static_cast<size_t>(kMaxCopyRank))
      << "a strided copy of " << sizes.size() << " non-mergeable dims; the CUDA copy kernel takes at most "
      << kMaxCopyRank;
  CopyLayout layout;
  layout.rank = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    layout.shape[d] = sizes[d];
    layout.strides[d] = steps[d];
  }
  return layout;
}

bool is_dense_layout(const CopyLayout& layout) {
  int64_t expected = 1;
  for (int d = layout.rank - 1; d >= 0; --d) {
    if (layout.strides[d] != expected) return false;
    expected *= layout.shape[d];
  }
  return true;
}

}  // namespace luminal::runtime::cuda
