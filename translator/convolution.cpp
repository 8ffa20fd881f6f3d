// Convolution (1d/2d/3d, groups, stride, padding, dilation, bias) as im2col + one Matmul: the
// zero-padded input is read through a sliding-window view (no copy), materialised once as the
// column matrix [N, G, Cg * prod(kernel), prod(out)], and multiplied by the weight seen as
// [G, OCg, Cg * prod(kernel)]. The product is already [N, OC, *out] row-major, so the result
// needs no transpose. One GEMM per (sample, group) keeps the speed in BLAS, as principle 1 asks.
// Transposed convolution is the same forward convolution over a zero-spread, re-padded input.
// convolution_backward composes the same three: the input's gradient is a transposed (or, for a
// transposed convolution, a forward) convolution, the weight's one GEMM per group over the
// input's columns.
#include <algorithm>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/spatial.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;

namespace {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// The sliding windows a convolution of x [N, C, *spatial] with a kernel of `kernel` reads:
// a view [N, G, Cg, *out, *kernel] of the zero-padded input, and the out sizes.
struct ConvWindows {
  Tensor view;
  std::vector<int64_t> out;
  int64_t kernel_volume = 1, out_volume = 1;
};

ConvWindows conv_windows(TranslationContext& cx, const Tensor& x, const std::vector<int64_t>& kernel, int64_t channels,
                         const ConvParams& p) {
  const int k = static_cast<int>(kernel.size());
  Tensor padded = x;
  ConvWindows w;
  for (int i = 0; i < k; ++i) {
    const int dim = 2 + i;
    const int64_t size = static_dim(x, dim, "convolution");
    const int64_t span = size + 2 * p.padding[i] - p.dilation[i] * (kernel[i] - 1) - 1;
    USER_CHECK(span >= 0 && p.stride[i] > 0) << "convolution: kernel " << kernel[i] << " with dilation "
                                             << p.dilation[i] << " is larger than the padded input size "
                                             << size + 2 * p.padding[i];
    w.out.push_back(span / p.stride[i] + 1);
    padded = pad_dim(cx, padded, dim, p.padding[i], p.padding[i], ir::Scalar::of_int(0));
    w.kernel_volume *= kernel[i];
    w.out_volume *= w.out.back();
  }
  w.view = split_dim(sliding_windows(padded, kernel, p.stride, p.dilation, w.out), 1, p.groups, channels / p.groups);
  return w;
}

std::vector<int64_t> kernel_of(const Tensor& w, const char* op) {
  std::vector<int64_t> kernel;
  for (int d = 2; d < w.rank(); ++d) kernel.push_back(static_dim(w, d, op));
  return kernel;
}

// The forward convolution of x [N, C, *spatial] with w [OC, C / groups, *kernel], both already
// in the compute dtype.
Tensor convolve(TranslationContext& cx, const Tensor& x, const Tensor& w, const ConvParams& p) {
  const int k = w.rank() - 2;
  // Channel counts come from the weight: under dynamic=True the input's channel dim is a symbol
  // that torch has already guarded equal to the weight's.
  const int64_t groups = p.groups;
  const int64_t out_channels = static_dim(w, 0, "convolution");
  const int64_t channels = static_dim(w, 1, "convolution") * groups;
  const Expr& input_channels = x.shape()[1];
  USER_CHECK(groups >= 1 && out_channels % groups == 0 &&
             (!input_channels.is_constant() || input_channels.constant_value() == channels))
      << "convolution: an input of shape " << shape_to_string(x.shape()) << ", a weight of shape "
      << shape_to_string(w.shape()) << " and groups=" << groups << " do not fit";
  const ConvWindows windows = conv_windows(cx, x, kernel_of(w, "convolution"), channels, p);
  // [N, G, Cg, *out, *kernel] -> [N, G, Cg, *kernel, *out]: the column matrix's row order matches
  // the weight's [Cg, *kernel] flattening.
  std::vector<int> order = {0, 1, 2};
  for (int i = 0; i < k; ++i) order.push_back(3 + k + i);
  for (int i = 0; i < k; ++i) order.push_back(3 + i);
  const Expr n = x.shape()[0];
  const int64_t group_channels = channels / groups;
  Tensor columns = reshape(cx, permute(windows.view, order),
                           {n, Expr(groups), Expr(group_channels * windows.kernel_volume), Expr(windows.out_volume)});
  Tensor weight = reshape(cx, w, {Expr(groups), Expr(out_channels / groups), Expr(group_channels * windows.kernel_volume)});
  std::vector<Expr> out_shape = {n, Expr(out_channels)};
  for (int64_t o : windows.out) out_shape.push_back(Expr(o));
  return reshape(cx, matmul(cx, weight, columns), out_shape);
}

// The weight gradient [OC, C / groups, *kernel] of the forward convolution of x [N, C, *in]
// whose result [N, OC, *out] has the gradient dy: per group, dy as [OCg, N * out] times x's
// columns as [N * out, Cg * kernel], the batch summed inside the one product.
Tensor convolution_weight_grad(TranslationContext& cx, const Tensor& x, const Tensor& dy,
                               const std::vector<int64_t>& kernel, const ConvParams& p) {
  const int k = static_cast<int>(kernel.size());
  const int64_t groups = p.groups;
  const int64_t channels = static_dim(x, 1, "convolution_backward");
  const int64_t out_channels = static_dim(dy, 1, "convolution_backward");
  const ConvWindows windows = conv_windows(cx, x, kernel, channels, p);
  for (int i = 0; i < k; ++i)
    USER_CHECK(windows.out[i] == static_dim(dy, 2 + i, "convolution_backward"))
        << "convolution_backward: a gradient of shape " << shape_to_string(dy.shape()) << " for an input of shape "
        << shape_to_string(x.shape());
  const Expr rows = x.shape()[0] * Expr(windows.out_volume);
  const int64_t group_channels = channels / groups;
  // [N, G, Cg, *out, *kernel] -> [G, N, *out, Cg, *kernel].
  std::vector<int> order = {1, 0};
  for (int i = 0; i < k; ++i) order.push_back(3 + i);
  order.push_back(2);
  for (int i = 0; i < k; ++i) order.push_back(3 + k + i);
  Tensor columns = reshape(cx, permute(windows.view, order),
                           {Expr(groups), rows, Expr(group_channels * windows.kernel_volume)});
  // dy [N, OC, *out] -> [G, OCg, N, out] -> [G, OCg, N * out].
  Tensor grouped = reshape(cx, dy, {dy.shape()[0], Expr(groups), Expr(out_channels / groups), Expr(windows.out_volume)});
  Tensor gradient = reshape(cx, permute(grouped, {1, 2, 0, 3}), {Expr(groups), Expr(out_channels / groups), rows});
  std::vector<Expr> shape = {Expr(out_channels), Expr(group_channels)};
  for (int64_t s : kernel) shape.push_back(Expr(s));
  return reshape(cx, matmul(cx, gradient, columns), shape);
}

// conv_transpose as a forward convolution: the input with stride - 1 zeros between its
// elements, padded by dilation * (kernel - 1) - padding (+ output_padding on the right; negative
// amounts crop), convolved at stride 1 with the weight's channels swapped per group and its
// kernel flipped. Weight [C, OC / groups, *kernel].
Tensor convolve_transposed(TranslationContext& cx, const Tensor& x, const Tensor& w, const ConvParams& p,
                           const std::vector<int64_t>& output_padding) {
  const int k = w.rank() - 2;
  const int64_t channels = static_dim(w, 0, "conv_transpose");
  const int64_t groups = p.groups;
  const Expr& input_channels = x.shape()[1];
  USER_CHECK(groups >= 1 && channels % groups == 0 &&
             (!input_channels.is_constant() || input_channels.constant_value() == channels))
      << "conv_transpose: an input of shape " << shape_to_string(x.shape()) << ", a weight of shape "
      << shape_to_string(w.shape()) << " and groups=" << groups << " do not fit";
  Tensor spread = x;
  for (int i = 0; i < k; ++i) {
    const int dim = 2 + i;
    const int64_t size = static_dim(x, dim, "conv_transpose");
    const int64_t kernel = static_dim(w, dim, "conv_transpose");
    USER_CHECK(output_padding[i] >= 0 && output_padding[i] < std::max(p.stride[i], p.dilation[i]))
        << "conv_transpose: output_padding " << output_padding[i] << " must be smaller than the stride or dilation";
    if (p.stride[i] > 1 && size > 0) {
      ir::Shape shape = spread.shape();
      shape[dim] = Expr((size - 1) * p.stride[i] + 1);
      Tensor at = binary(cx, ir::Op::Mul, positions(cx, size), int_constant(cx, p.stride[i]));
      spread = scatter(cx, constant(cx, ir::Scalar::of_int(0), spread.dtype, shape), dim,
                       index_along(at, dim, spread.shape()), spread, /*accumulate=*/false);
    }
    const int64_t border = p.dilation[i] * (kernel - 1) - p.padding[i];
    spread = pad_dim(cx, spread, dim, border, border + output_padding[i], ir::Scalar::of_int(0));
  }
  // [C, OCg, *kernel] -> [G, OCg, Cg, *kernel] -> [OC, Cg, *kernel], each kernel dim reversed.
  const int64_t group_channels = channels / groups;
  const int64_t out_group_channels = static_dim(w, 1, "conv_transpose");
  std::vector<int> order = {0, 2, 1};
  for (int i = 0; i < k; ++i) order.push_back(3 + i);
  Tensor weight = permute(split_dim(w, 0, groups, group_channels), order);
  std::vector<Expr> shape = {Expr(groups * out_group_channels), Expr(group_channels)};
  for (int i = 0; i < k; ++i) shape.push_back(w.shape()[2 + i]);
  weight = reshape(cx, weight, shape);
  for (int i = 0; i < k; ++i) {
    const int dim = 2 + i;
    const int64_t kernel = static_dim(w, dim, "conv_transpose");
    Tensor reversed = binary(cx, ir::Op::Sub, int_constant(cx, kernel - 1), positions(cx, kernel));
    weight = gather(cx, weight, dim, index_along(reversed, dim, weight.shape()));
  }
  ConvParams forward = p;
  forward.stride.assign(k, 1);
  forward.padding.assign(k, 0);
  return convolve(cx, spread, weight, forward);
}

}  // namespace

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias), each
// only where asked for. For a forward convolution the input's gradient is the transposed
// convolution of grad_output with the weight (output_padding restores the rows the forward's
// stride skipped) and the weight's is convolution_weight_grad; a transposed convolution swaps
// the two roles: its input's gradient is the forward convolution of grad_output, and its
// weight's the weight gradient with grad_output as the input. The bias's is grad_output summed
// over all dims but the channels.
void translate_convolution_backward(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor dy = args.tensor("grad_output");
  Tensor x = args.tensor("input");
  Tensor w = args.tensor("weight");
  const int k = w.rank() - 2;
  USER_CHECK(k >= 1 && k <= 3 && x.rank() == k + 2 && dy.rank() == k + 2)
      << "convolution_backward of an input of shape " << shape_to_string(x.shape()) << ", a weight of shape "
      << shape_to_string(w.shape()) << " and a gradient of shape " << shape_to_string(dy.shape());
  ConvParams p;
  p.stride = spatial_ints(args, "stride", k);
  p.padding = spatial_ints(args, "padding", k);
  p.dilation = spatial_ints(args, "dilation", k);
  p.groups = args.integer("groups");
  const bool transposed = args.boolean("transposed");
  const DType c = compute_dtype(dy.dtype);
  const Tensor dyc = cast(cx, dy, c), xc = cast(cx, x, c), wc = cast(cx, w, c);
  if (!args.output_name(0).empty()) {
    Tensor dx;
    if (transposed) {
      dx = convolve(cx, dyc, wc, p);
    } else {
      // The rows of the input past the forward's last window get no gradient: output_padding.
      std::vector<int64_t> output_padding;
      for (int i = 0; i < k; ++i) {
        const int64_t rebuilt = (static_dim(dy, 2 + i, "convolution_backward") - 1) * p.stride[i] -
                                2 * p.padding[i] + p.dilation[i] * (static_dim(w, 2 + i, "convolution_backward") - 1) + 1;
        output_padding.push_back(static_dim(x, 2 + i, "convolution_backward") - rebuilt);
      }
      dx = convolve_transposed(cx, dyc, wc, p, output_padding);
    }
    args.set_output(0, cast(cx, dx, args.output_dtype(0)));
  }
  if (!args.output_name(1).empty()) {
    const std::vector<int64_t> kernel = kernel_of(w, "convolution_backward");
    Tensor dw = transposed ? convolution_weight_grad(cx, dyc, xc, kernel, p) : convolution_weight_grad(cx, xc, dyc, kernel, p);
    args.set_output(1, cast(cx, dw, args.output_dtype(1)));
  }
  if (!args.output_name(2).empty()) {
    std::vector<int> dims = {0};
    for (int i = 0; i < k; ++i) dims.push_back(2 + i);
    // Over dy with its spatial dims as one (merge_reduced_dims), cast in that view to fuse.
    const MergedReduction merged = merge_reduced_dims(dy, dims);
    Tensor db = reduce(cx, ir::Op::SumReduce, cast(cx, merged.input, c), merged.axes, /*keepdim=*/true);
    args.set_output(2, cast(cx, merged.restore(db, /*keepdim=*/false), args.output_dtype(2)));
  }
}

void translate_convolution(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  Tensor w = args.tensor("weight");
  const int k = w.rank() - 2;
  USER_CHECK(k >= 1 && k <= 3) << "convolution with a weight of rank " << w.rank() << " (expected 3, 4 or 5)";
  USER_CHECK(x.rank() == k + 2) << "convolution of an input of shape " << shape_to_string(x.shape()) << " with a "
                                << k << "d weight of shape " << shape_to_string(w.shape());
  ConvParams p;
  p.stride = spatial_ints(args, "stride", k);
  p.padding = spatial_ints(args, "padding", k);
  p.dilation = spatial_ints(args, "dilation", k);
  p.groups = args.integer("groups");
  // Compute in f32 for f16/bf16 and round once, as torch's CPU convolution accumulates.
  const DType c = compute_dtype(x.dtype);
  Tensor result = args.boolean("transposed")
                      ? convolve_transposed(cx, cast(cx, x, c), cast(cx, w, c), p,
                                            spatial_ints(args, "output_padding", k))
                      : convolve(cx, cast(cx, x, c), cast(cx, w, c), p);
  if (std::optional<Tensor> bias = args.optional_tensor("bias")) {
    Tensor b = cast(cx, *bias, c);
    for (int i = 0; i < k; ++i) b = unsqueeze(b, b.rank());
    result = binary(cx, ir::Op::Add, result, b);
  }
  args.set_output(0, cast(cx, result, x.dtype));
}

}  // namespace luminal::translator
