// upsample_nearest2d and upsample_bilinear2d: per spatial dim, source positions (and for
// bilinear two taps with weights) computed from Iota exactly as torch's CPU kernels compute them
// (aten/src/ATen/native/UpSample.h), then one Gather per tap:
// - nearest: nearest_idx: identity when the size is kept, o >> 1 when doubled, else
//   min(floor(o * scale), size - 1) in float, scale = 1/scale_factor or size/out.
// - bilinear: area_pixel_compute_source_index in the op-math dtype (f32 for f16/bf16/f32, f64
//   for f64), then guard_index_and_lambda. The width taps are blended first and the height taps
//   second, as torch's separable kernel nests them: (x00*w0 + x01*w1)*h0 + (x10*w0 + x11*w1)*h1.
#include <cmath>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/spatial.h"

namespace luminal::translator {

using ir::DType;
using ir::Op;

namespace {

struct UpsampleSizes {
  std::vector<int64_t> in, out;
  std::vector<std::optional<double>> scales;  // the scale factors torch's kernel sees
};

// output_size, or floor(size * scale_factor) with the factors passed on to the kernel.
UpsampleSizes upsample_sizes(NodeArgs& args, const Tensor& x, const char* op) {
  USER_CHECK(x.rank() == 4) << op << " expects an [N, C, H, W] input, got shape " << shape_to_string(x.shape());
  UpsampleSizes s;
  for (int d = 2; d < 4; ++d) s.in.push_back(static_dim(x, d, op));
  if (!args.is_none("output_size")) {
    s.out = args.integers("output_size");
    s.scales.assign(2, std::nullopt);
  } else {
    USER_CHECK(!args.is_none("scale_factors")) << op << ": neither output_size nor scale_factors is given";
    const std::vector<double>& factors = args.raw("scale_factors").floats;
    USER_CHECK(factors.size() == 2) << op << ": scale_factors has " << factors.size() << " values";
    for (int i = 0; i < 2; ++i) {
      s.out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(s.in[i]) * factors[i])));
      s.scales.push_back(factors[i]);
    }
  }
  USER_CHECK(s.out.size() == 2 && s.out[0] > 0 && s.out[1] > 0) << op << ": output size must be 2 positive values";
  return s;
}

// torch's area_pixel_compute_scale in the op-math type T.
template <typename T>
T pixel_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : static_cast<T>(0);
  if (scale && *scale > 0) return static_cast<T>(1.0 / *scale);
  return static_cast<T>(in) / static_cast<T>(out);
}

Tensor nearest_positions(TranslationContext& cx, int64_t in, int64_t out, std::optional<double> scale) {
  Tensor o = positions(cx, out);
  if (out == in) return o;
  if (out == 2 * in) return binary(cx, Op::Div, o, int_constant(cx, 2));
  const float s = pixel_scale<float>(in, out, /*align_corners=*/false, scale);
  Tensor source = binary(cx, Op::Mul, cast(cx, o, DType::F32), float_constant(cx, s, DType::F32));
  Tensor index = cast(cx, unary(cx, Op::Floor, source), DType::I64);
  return binary(cx, Op::Min, index, int_constant(cx, in - 1));
}

struct LinearTaps {
  Tensor index0, index1, lambda0, lambda1;
};

LinearTaps linear_taps(TranslationContext& cx, int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
                       DType c) {
  const double s = c == DType::F64 ? pixel_scale<double>(in, out, align_corners, scale)
                                   : static_cast<double>(pixel_scale<float>(in, out, align_corners, scale));
  Tensor o = cast(cx, positions(cx, out), c);
  Tensor real;
  if (align_corners) {
    real = binary(cx, Op::Mul, float_constant(cx, s, c), o);
  } else {
    Tensor half = float_constant(cx, 0.5, c);
    real = binary(cx, Op::Sub, binary(cx, Op::Mul, float_constant(cx, s, c), binary(cx, Op::Add, o, half)), half);
    real = binary(cx, Op::Max, real, float_constant(cx, 0.0, c));
  }
  LinearTaps t;
  t.index0 = binary(cx, Op::Min, cast(cx, unary(cx, Op::Floor, real), DType::I64), int_constant(cx, in - 1));
  Tensor lambda = binary(cx, Op::Sub, real, cast(cx, t.index0, c));
  t.lambda1 = binary(cx, Op::Min, binary(cx, Op::Max, lambda, float_constant(cx, 0.0, c)), float_constant(cx, 1.0, c));
  t.lambda0 = binary(cx, Op::Sub, float_constant(cx, 1.0, c), t.lambda1);
  Tensor has_next = cast(cx, binary(cx, Op::Lt, t.index0, int_constant(cx, in - 1)), DType::I64);
  t.index1 = binary(cx, Op::Add, t.index0, has_next);
  return t;
}

// The weights of a tap along dim, shaped to broadcast against a rank-`rank` tensor.
Tensor along_dim(const Tensor& weights, int dim, int rank) {
  Tensor w = weights;
  for (int d = dim + 1; d < rank; ++d) w = unsqueeze(w, w.rank());
  return w;
}

Tensor blend(TranslationContext& cx, const Tensor& x, int dim, const LinearTaps& t) {
  ir::Shape shape = x.shape();
  Tensor tap0 = gather(cx, x, dim, index_along(t.index0, dim, shape));
  Tensor tap1 = gather(cx, x, dim, index_along(t.index1, dim, shape));
  return binary(cx, Op::Add, binary(cx, Op::Mul, tap0, along_dim(t.lambda0, dim, x.rank())),
                binary(cx, Op::Mul, tap1, along_dim(t.lambda1, dim, x.rank())));
}

}  // namespace

void translate_upsample_nearest2d_vec(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  const UpsampleSizes s = upsample_sizes(args, x, "upsample_nearest2d");
  Tensor out = x;
  for (int i = 0; i < 2; ++i) {
    const int dim = 2 + i;
    out = gather(cx, out, dim, index_along(nearest_positions(cx, s.in[i], s.out[i], s.scales[i]), dim, out.shape()));
  }
  args.set_output(0, out);
}

void translate_upsample_bilinear2d_vec(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  USER_CHECK(ir::is_floating(x.dtype)) << "upsample_bilinear2d of a " << ir::dtype_name(x.dtype) << " tensor";
  const UpsampleSizes s = upsample_sizes(args, x, "upsample_bilinear2d");
  const bool align_corners = args.boolean("align_corners");
  const DType c = compute_dtype(x.dtype);
  Tensor out = cast(cx, x, c);
  for (int dim : {3, 2}) {
    const int i = dim - 2;
    out = blend(cx, out, dim, linear_taps(cx, s.in[i], s.out[i], align_corners, s.scales[i], c));
  }
  args.set_output(0, cast(cx, out, x.dtype));
}

}  // namespace luminal::translator
