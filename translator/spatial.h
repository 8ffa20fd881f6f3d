// Building blocks shared by the spatial families (convolution.cpp, pooling.cpp, padding.cpp,
// upsample.cpp). They all read an [N, C, *spatial] tensor either through sliding windows (a
// view whose window dims step by stride and dilation over a padded copy) or through one index
// map per spatial dim (a Gather whose index is Iota arithmetic). Spatial sizes must be static:
// torch derives the windows and index maps of these ops from them.
#pragma once

#include <string>
#include <vector>

#include "translator/args.h"

namespace luminal::translator {

// An int[k] argument that torch lets a caller write as one int for every spatial dim
// (kernel_size=3) or as k ints; an empty list (a pool's default stride) gives `if_empty`.
std::vector<int64_t> spatial_ints(NodeArgs& args, const std::string& name, size_t k,
                                  const std::vector<int64_t>& if_empty = {});

// The static size of dim (UnsupportedError naming `op` when it is symbolic).
int64_t static_dim(const Tensor& t, int dim, const char* op);

// The lowest value of a dtype (-inf for floats): max pooling pads with it.
ir::Scalar lowest_value(ir::DType dtype);

// t with `left` and `right` elements of `value` added along dim (a Scatter of t into a
// constant: the windows read a real buffer). Negative amounts crop, as torch's pads do.
Tensor pad_dim(TranslationContext& cx, const Tensor& t, int dim, int64_t left, int64_t right, const ir::Scalar& value);

// A view of t's last k dims as windows: shape t.shape[:-k] + out + kernel, where out dim i
// steps stride[i] elements and kernel dim i steps dilation[i] elements of spatial dim i. The
// windows overlap when stride < kernel; nothing is copied. t must hold every element the last
// window reads ((out - 1) * stride + (kernel - 1) * dilation + 1 <= size; pad first).
Tensor sliding_windows(const Tensor& t, const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& dilation, const std::vector<int64_t>& out);

// A view splitting dim (of size outer * inner, possibly written as a symbol torch guarded to
// equal it) into [outer, inner]: channels into groups.
Tensor split_dim(const Tensor& t, int dim, int64_t outer, int64_t inner);

// torch's pooling_output_shape (aten/src/ATen/native/Pool.h): the window count along a dim of
// `size` padded by `pad` on both sides; with ceil_mode a last partial window counts when it
// starts inside the input or the left padding.
int64_t pooling_output_size(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);

// The right padding that makes every window of a dim fit: `pad`, or more when ceil_mode's last
// window runs past the right padding (those extra elements are never valid).
int64_t right_pad_for(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, int64_t out);

// 0, 1, ..., n-1 as i64 and as `dtype`.
Tensor positions(TranslationContext& cx, int64_t n);
Tensor int_constant(TranslationContext& cx, int64_t v);
Tensor float_constant(TranslationContext& cx, double v, ir::DType dtype);

}  // namespace luminal::translator
