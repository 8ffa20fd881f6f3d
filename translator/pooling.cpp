// Pooling over the last 2 or 3 dims of [N, C, *spatial] or [C, *spatial] inputs.
// - max_pool{2,3}d_with_indices: reductions over a sliding-window view of the input padded with
//   the dtype's lowest value. The indices come from the same windows over an "index plane"
//   (each element's flat position h*W + w, padding = -1), so they equal torch's exactly: within a
//   window the flat position grows in window order, so the first max is the smallest position
//   holding the max, and a NaN wins as in torch's CPU kernel (`val > max || isnan(val)`: the
//   last NaN of the window).
// - avg_pool{2,3}d: a window sum over the zero-padded input divided by torch's per-window
//   divisor (built from Iota arithmetic, with or without the padding, or divisor_override).
// - the backwards: max pooling's gradient summed at its indices, average pooling's at every
//   element of its windows (a Scatter each), adaptive pooling's through the transposed products.
// - _adaptive_avg_pool{2,3}d: windows of varying size, so per spatial dim a Matmul with a 0/1
//   membership matrix [size, out] (start = floor(o*size/out), end = ceil((o+1)*size/out)),
//   then one division by the window volumes.
#include <limits>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/spatial.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;

namespace {

struct PoolGeometry {
  std::vector<int64_t> size, kernel, stride, padding, dilation, out;
  int lead = 0;  // dims before the spatial ones
};

PoolGeometry pool_geometry(NodeArgs& args, const Tensor& x, int k, bool has_dilation, const char* op) {
  PoolGeometry g;
  USER_CHECK(x.rank() == k + 1 || x.rank() == k + 2)
      << op << " expects a " << k + 1 << "d or " << k + 2 << "d input, got shape " << shape_to_string(x.shape());
  g.lead = x.rank() - k;
  g.kernel = spatial_ints(args, "kernel_size", k);
  g.stride = spatial_ints(args, "stride", k, g.kernel);
  g.padding = spatial_ints(args, "padding", k);
  g.dilation = has_dilation ? spatial_ints(args, "dilation", k) : std::vector<int64_t>(k, 1);
  const bool ceil_mode = args.boolean("ceil_mode");
  for (int i = 0; i < k; ++i) {
    USER_CHECK(g.kernel[i] > 0 && g.stride[i] > 0 && g.dilation[i] > 0 && g.padding[i] >= 0 &&
               g.padding[i] * 2 <= g.kernel[i])
        << op << ": kernel " << g.kernel[i] << ", stride " << g.stride[i] << ", padding " << g.padding[i]
        << " (pad must be at most half the kernel)";
    g.size.push_back(static_dim(x, g.lead + i, op));
    g.out.push_back(pooling_output_size(g.size[i], g.kernel[i], g.padding[i], g.stride[i], g.dilation[i], ceil_mode));
    USER_CHECK(g.out[i] > 0) << op << ": the output size of spatial dim " << i << " would be " << g.out[i];
  }
  return g;
}

// x padded along every spatial dim so that each window fits.
Tensor pad_for_windows(TranslationContext& cx, const Tensor& x, const PoolGeometry& g, const ir::Scalar& value) {
  Tensor out = x;
  for (size_t i = 0; i < g.size.size(); ++i) {
    const int64_t right = right_pad_for(g.size[i], g.kernel[i], g.padding[i], g.stride[i], g.dilation[i], g.out[i]);
    out = pad_dim(cx, out, g.lead + static_cast<int>(i), g.padding[i], right, value);
  }
  return out;
}

Tensor windows_of(const Tensor& padded, const PoolGeometry& g) {
  return sliding_windows(padded, g.kernel, g.stride, g.dilation, g.out);
}

// The window dims of a windows_of() view: its last k dims.
std::vector<int> window_dims(const Tensor& windows, size_t k) {
  std::vector<int> dims;
  for (size_t i = 0; i < k; ++i) dims.push_back(windows.rank() - static_cast<int>(k) + static_cast<int>(i));
  return dims;
}

void max_pool_with_indices(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(!ir::is_bool(x.dtype)) << op << " of a bool tensor";
  const PoolGeometry g = pool_geometry(args, x, k, /*has_dilation=*/true, op);
  Tensor values = windows_of(pad_for_windows(cx, x, g, lowest_value(x.dtype)), g);
  const std::vector<int> dims = window_dims(values, k);
  Tensor max = reduce(cx, Op::MaxReduce, values, dims, /*keepdim=*/true);

  // The index plane: flat position within one input plane, -1 in the padding.
  int64_t plane = 1;
  ir::Shape plane_shape;
  for (int64_t s : g.size) {
    plane *= s;
    plane_shape.push_back(Expr(s));
  }
  Tensor flat = reshape(cx, positions(cx, plane), plane_shape);
  PoolGeometry plane_geometry = g;
  plane_geometry.lead = 0;
  Tensor index = windows_of(pad_for_windows(cx, flat, plane_geometry, ir::Scalar::of_int(-1)), plane_geometry);
  Tensor valid = binary(cx, Op::Le, int_constant(cx, 0), index);

  Tensor is_max = binary(cx, Op::And, binary(cx, Op::Eq, values, max), valid);
  Tensor never = int_constant(cx, std::numeric_limits<int64_t>::max());
  Tensor first_max = reduce(cx, Op::MinReduce, where(cx, is_max, index, never), dims, /*keepdim=*/false);
  Tensor chosen = first_max;
  if (ir::is_floating(x.dtype)) {
    Tensor is_nan = binary(cx, Op::And, unary(cx, Op::IsNan, values), valid);
    Tensor none = int_constant(cx, -1);
    Tensor last_nan = reduce(cx, Op::MaxReduce, where(cx, is_nan, index, none), dims, /*keepdim=*/false);
    chosen = where(cx, binary(cx, Op::Le, int_constant(cx, 0), last_nan), last_nan, first_max);
  }
  Tensor result = max;
  for (int i = k - 1; i >= 0; --i) result = squeeze(result, dims[i]);
  args.set_output(0, result);
  if (!args.output_name(1).empty()) args.set_output(1, chosen);
}

// max_pool{2,3}d_with_indices_backward(grad_output, self, ..., indices): each window's gradient
// goes to the input element its index names (a flat position in the input's plane), summed where
// windows overlap: one accumulating Scatter per plane, as torch's kernel adds them.
void max_pool_backward(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor dy = args.tensor("grad_output"), x = args.tensor("self"), indices = args.tensor("indices");
  USER_CHECK(ir::is_floating(dy.dtype)) << op << " of a " << ir::dtype_name(dy.dtype) << " gradient";
  USER_CHECK(x.rank() == k + 1 || x.rank() == k + 2)
      << op << " expects a " << k + 1 << "d or " << k + 2 << "d input, got shape " << shape_to_string(x.shape());
  USER_CHECK(dy.rank() == x.rank() && indices.rank() == x.rank() && ir::is_integral(indices.dtype))
      << op << ": a gradient of shape " << shape_to_string(dy.shape()) << " and indices of shape "
      << shape_to_string(indices.shape()) << " for an input of shape " << shape_to_string(x.shape());
  const int lead = x.rank() - k;
  int64_t plane = 1, windows = 1;
  for (int d = lead; d < x.rank(); ++d) {
    plane *= static_dim(x, d, op);
    windows *= static_dim(dy, d, op);
  }
  ir::Shape plane_shape(x.shape().begin(), x.shape().begin() + lead), window_shape = plane_shape;
  plane_shape.push_back(Expr(plane));
  window_shape.push_back(Expr(windows));
  const DType c = compute_dtype(dy.dtype);
  Tensor gradient = reshape(cx, cast(cx, dy, c), window_shape);
  Tensor position = reshape(cx, cast(cx, indices, DType::I64), window_shape);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), c, plane_shape);
  Tensor summed = scatter(cx, zero, lead, position, gradient, /*accumulate=*/true);
  args.set_output(0, cast(cx, reshape(cx, summed, x.shape()), args.output_dtype(0)));
}

// Window sizes along one spatial dim, as torch's avg_pool kernels count them: with the padding
// (but not past it: ceil_mode's overhang is never counted) or only the input's own elements.
Tensor window_counts(TranslationContext& cx, int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t out,
                     bool count_include_pad) {
  Tensor start = binary(cx, Op::Sub, binary(cx, Op::Mul, positions(cx, out), int_constant(cx, stride)),
                        int_constant(cx, pad));
  Tensor end = binary(cx, Op::Min, binary(cx, Op::Add, start, int_constant(cx, kernel)), int_constant(cx, size + pad));
  if (count_include_pad) return binary(cx, Op::Sub, end, start);
  Tensor clamped_end = binary(cx, Op::Min, end, int_constant(cx, size));
  Tensor clamped_start = binary(cx, Op::Max, start, int_constant(cx, 0));
  return binary(cx, Op::Sub, clamped_end, clamped_start);
}

// Per-dim 1-d tensors [o_i] multiplied into one [o_0, .., o_{k-1}] tensor.
Tensor outer_product(TranslationContext& cx, const std::vector<Tensor>& factors) {
  const int k = static_cast<int>(factors.size());
  Tensor out;
  for (int i = 0; i < k; ++i) {
    Tensor f = factors[i];
    for (int j = i + 1; j < k; ++j) f = unsqueeze(f, f.rank());
    out = i == 0 ? f : binary(cx, Op::Mul, out, f);
  }
  return out;
}

// Each window's divisor [*out] in `c`: divisor_override, or its size with or without the padding.
Tensor avg_pool_divisor(NodeArgs& args, const PoolGeometry& g, DType c, const char* op) {
  TranslationContext& cx = args.cx();
  if (!args.is_none("divisor_override")) {
    const int64_t d = args.integer("divisor_override");
    USER_CHECK(d != 0) << op << ": divisor_override must be non-zero";
    return constant(cx, ir::Scalar::of_int(d), c);
  }
  const bool include_pad = args.boolean("count_include_pad");
  std::vector<Tensor> counts;
  for (size_t i = 0; i < g.size.size(); ++i)
    counts.push_back(window_counts(cx, g.size[i], g.kernel[i], g.padding[i], g.stride[i], g.out[i], include_pad));
  return cast(cx, outer_product(cx, counts), c);
}

void avg_pool(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(!ir::is_bool(x.dtype)) << op << " of a bool tensor";
  const PoolGeometry g = pool_geometry(args, x, k, /*has_dilation=*/false, op);
  const DType c = compute_dtype(x.dtype);
  Tensor windows = windows_of(pad_for_windows(cx, cast(cx, x, c), g, ir::Scalar::of_int(0)), g);
  Tensor sum = reduce(cx, Op::SumReduce, windows, window_dims(windows, k), /*keepdim=*/false);
  args.set_output(0, cast(cx, binary(cx, Op::Div, sum, avg_pool_divisor(args, g, c, op)), x.dtype));
}

// avg_pool{2,3}d_backward(grad_output, self, ...): each window's gradient divided by its divisor
// and added to every input element of the window. The windows of an index plane (each element's
// flat position, the padding an extra slot dropped afterwards) say where: one accumulating
// Scatter per plane.
void avg_pool_backward(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor dy = args.tensor("grad_output"), x = args.tensor("self");
  USER_CHECK(ir::is_floating(dy.dtype)) << op << " of a " << ir::dtype_name(dy.dtype) << " gradient";
  const PoolGeometry g = pool_geometry(args, x, k, /*has_dilation=*/false, op);
  const int lead = g.lead;
  USER_CHECK(dy.rank() == x.rank()) << op << ": a gradient of shape " << shape_to_string(dy.shape())
                                    << " for an input of shape " << shape_to_string(x.shape());
  for (int i = 0; i < k; ++i)
    USER_CHECK(static_dim(dy, lead + i, op) == g.out[i])
        << op << ": a gradient of shape " << shape_to_string(dy.shape()) << " for windows of " << g.out[i];
  const DType c = compute_dtype(dy.dtype);
  Tensor share = binary(cx, Op::Div, cast(cx, dy, c), avg_pool_divisor(args, g, c, op));  // [lead, *out]
  int64_t plane = 1, window_count = 1, kernel_volume = 1;
  ir::Shape plane_shape;
  for (int i = 0; i < k; ++i) {
    plane *= g.size[i];
    window_count *= g.out[i];
    kernel_volume *= g.kernel[i];
    plane_shape.push_back(Expr(g.size[i]));
  }
  PoolGeometry plane_geometry = g;
  plane_geometry.lead = 0;
  Tensor flat = reshape(cx, positions(cx, plane), plane_shape);
  Tensor index = windows_of(pad_for_windows(cx, flat, plane_geometry, ir::Scalar::of_int(plane)), plane_geometry);
  ir::Shape lead_shape(x.shape().begin(), x.shape().begin() + lead);
  ir::Shape pairs = lead_shape, slots = lead_shape;
  pairs.push_back(Expr(window_count * kernel_volume));
  slots.push_back(Expr(plane + 1));
  // [*out, *kernel] -> [1.., out * kernel], expanded over the lead dims.
  Tensor where_to = reshape(cx, index, {Expr(window_count * kernel_volume)});
  for (int d = 0; d < lead; ++d) where_to = unsqueeze(where_to, 0);
  where_to = expand(where_to, pairs);
  // [lead, *out] -> [lead, *out, 1.. (k)] broadcast over the kernel dims.
  ir::Shape spread_shape = share.shape();
  for (int i = 0; i < k; ++i) spread_shape.push_back(Expr(g.kernel[i]));
  Tensor spread = share;
  for (int i = 0; i < k; ++i) spread = unsqueeze(spread, spread.rank());
  spread = reshape(cx, expand(spread, spread_shape), pairs);
  Tensor summed = scatter(cx, constant(cx, ir::Scalar::of_int(0), c, slots), lead, where_to, spread, /*accumulate=*/true);
  Tensor inside = slice(summed, lead, Expr(int64_t{0}), Expr(plane), 1);
  args.set_output(0, cast(cx, reshape(cx, inside, x.shape()), args.output_dtype(0)));
}

// The 0/1 matrix [size, out] of adaptive pooling windows along one dim, and their sizes [out].
std::pair<Tensor, Tensor> adaptive_windows(TranslationContext& cx, int64_t size, int64_t out, DType dtype) {
  Tensor o = positions(cx, out);
  Tensor start = binary(cx, Op::Div, binary(cx, Op::Mul, o, int_constant(cx, size)), int_constant(cx, out));
  Tensor next = binary(cx, Op::Add, o, int_constant(cx, 1));
  Tensor rounded_up = binary(cx, Op::Add, binary(cx, Op::Mul, next, int_constant(cx, size)), int_constant(cx, out - 1));
  Tensor end = binary(cx, Op::Div, rounded_up, int_constant(cx, out));
  Tensor s = unsqueeze(positions(cx, size), 1);  // [size, 1] against [out]
  Tensor inside = binary(cx, Op::And, binary(cx, Op::Le, start, s), binary(cx, Op::Lt, s, end));
  Tensor membership =
      where(cx, inside, constant(cx, ir::Scalar::of_int(1), dtype), constant(cx, ir::Scalar::of_int(0), dtype));
  return {membership, binary(cx, Op::Sub, end, start)};
}

void adaptive_avg_pool(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << op << " of a " << ir::dtype_name(x.dtype) << " tensor";
  USER_CHECK(x.rank() == k + 1 || x.rank() == k + 2)
      << op << " expects a " << k + 1 << "d or " << k + 2 << "d input, got shape " << shape_to_string(x.shape());
  const std::vector<int64_t> out = args.integers("output_size");
  USER_CHECK(static_cast<int>(out.size()) == k) << op << ": output_size has " << out.size() << " values";
  const DType c = compute_dtype(x.dtype);
  const int lead = x.rank() - k;
  Tensor result = cast(cx, x, c);
  std::vector<Tensor> counts;
  for (int i = 0; i < k; ++i) {
    const int dim = lead + i;
    const int64_t size = static_dim(x, dim, op);
    USER_CHECK(out[i] > 0 && size > 0) << op << ": output size " << out[i] << " for an input of size " << size;
    auto [membership, count] = adaptive_windows(cx, size, out[i], c);
    result = transpose(matmul(cx, transpose(result, dim, -1), membership), dim, -1);
    counts.push_back(count);
  }
  args.set_output(0, cast(cx, binary(cx, Op::Div, result, cast(cx, outer_product(cx, counts), c)), x.dtype));
}

// _adaptive_avg_pool{2,3}d_backward(grad_output, self): the forward's products transposed: the
// gradient divided by the window volumes, then per spatial dim times the membership matrix.
void adaptive_avg_pool_backward(NodeArgs& args, int k, const char* op) {
  TranslationContext& cx = args.cx();
  Tensor dy = args.tensor("grad_output"), x = args.tensor("self");
  USER_CHECK(ir::is_floating(dy.dtype)) << op << " of a " << ir::dtype_name(dy.dtype) << " gradient";
  USER_CHECK((x.rank() == k + 1 || x.rank() == k + 2) && dy.rank() == x.rank())
      << op << ": a gradient of shape " << shape_to_string(dy.shape()) << " for an input of shape "
      << shape_to_string(x.shape());
  const DType c = compute_dtype(dy.dtype);
  const int lead = x.rank() - k;
  std::vector<Tensor> counts, memberships;
  for (int i = 0; i < k; ++i) {
    const int64_t size = static_dim(x, lead + i, op), out = static_dim(dy, lead + i, op);
    USER_CHECK(out > 0 && size > 0) << op << ": output size " << out << " for an input of size " << size;
    auto [membership, count] = adaptive_windows(cx, size, out, c);
    memberships.push_back(membership);
    counts.push_back(count);
  }
  Tensor result = binary(cx, Op::Div, cast(cx, dy, c), cast(cx, outer_product(cx, counts), c));
  for (int i = 0; i < k; ++i) {
    const int dim = lead + i;
    result = transpose(matmul(cx, transpose(result, dim, -1), transpose(memberships[i], 0, 1)), dim, -1);
  }
  args.set_output(0, cast(cx, result, args.output_dtype(0)));
}

}  // namespace

void translate_max_pool2d_with_indices(NodeArgs& args) { max_pool_with_indices(args, 2, "max_pool2d"); }
void translate_max_pool3d_with_indices(NodeArgs& args) { max_pool_with_indices(args, 3, "max_pool3d"); }
void translate_max_pool2d_with_indices_backward(NodeArgs& args) {
  max_pool_backward(args, 2, "max_pool2d_with_indices_backward");
}
void translate_max_pool3d_with_indices_backward(NodeArgs& args) {
  max_pool_backward(args, 3, "max_pool3d_with_indices_backward");
}
void translate_avg_pool2d(NodeArgs& args) { avg_pool(args, 2, "avg_pool2d"); }
void translate_avg_pool3d(NodeArgs& args) { avg_pool(args, 3, "avg_pool3d"); }
void translate_avg_pool2d_backward(NodeArgs& args) { avg_pool_backward(args, 2, "avg_pool2d_backward"); }
void translate_avg_pool3d_backward(NodeArgs& args) { avg_pool_backward(args, 3, "avg_pool3d_backward"); }
void translate_adaptive_avg_pool2d(NodeArgs& args) { adaptive_avg_pool(args, 2, "adaptive_avg_pool2d"); }
void translate_adaptive_avg_pool3d(NodeArgs& args) { adaptive_avg_pool(args, 3, "adaptive_avg_pool3d"); }
void translate_adaptive_avg_pool2d_backward(NodeArgs& args) {
  adaptive_avg_pool_backward(args, 2, "adaptive_avg_pool2d_backward");
}
void translate_adaptive_avg_pool3d_backward(NodeArgs& args) {
  adaptive_avg_pool_backward(args, 3, "adaptive_avg_pool3d_backward");
}

}  // namespace luminal::translator
