// Neural-network functions torch keeps whole after decomposition: softmax, log_softmax, the
// norms, gelu, silu, dropout. Each computes f16/bf16 inputs in f32 and rounds once at the end,
// as torch's CPU kernels do, so bf16 models match eager within bf16 tolerance.
#include <cmath>

#include "common/error.h"
#include "translator/aten_fallback.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Op;

namespace {

Tensor number(TranslationContext& cx, double v, DType dtype) { return constant(cx, ir::Scalar::of_float(v), dtype); }

// x - max(x) along dim, in the compute dtype: the stable shift shared by softmax and log_softmax.
Tensor shifted(TranslationContext& cx, const Tensor& x, int dim) {
  Tensor xf = cast(cx, x, compute_dtype(x.dtype));
  Tensor max = reduce(cx, Op::MaxReduce, xf, {dim}, /*keepdim=*/true);
  return binary(cx, Op::Sub, xf, max);
}

DType softmax_output_dtype(NodeArgs& args, const Tensor& x) {
  // half_to_float asks for an f32 result from an f16 input (a CUDA-only path in eager).
  return args.boolean("half_to_float") ? DType::F32 : x.dtype;
}

}  // namespace

void translate_softmax(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "softmax of a " << ir::dtype_name(x.dtype) << " tensor";
  if (x.rank() == 0) return args.set_output(0, constant(cx, ir::Scalar::of_float(1.0), softmax_output_dtype(args, x)));
  const int dim = wrap_dim(args.integer("dim"), x.rank());
  Tensor e = unary(cx, Op::Exp, shifted(cx, x, dim));
  Tensor sum = reduce(cx, Op::SumReduce, e, {dim}, /*keepdim=*/true);
  args.set_output(0, cast(cx, binary(cx, Op::Div, e, sum), softmax_output_dtype(args, x)));
}

void translate_log_softmax(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "log_softmax of a " << ir::dtype_name(x.dtype) << " tensor";
  if (x.rank() == 0) return args.set_output(0, constant(cx, ir::Scalar::of_float(0.0), softmax_output_dtype(args, x)));
  const int dim = wrap_dim(args.integer("dim"), x.rank());
  Tensor s = shifted(cx, x, dim);
  Tensor log_sum = unary(cx, Op::Log, reduce(cx, Op::SumReduce, unary(cx, Op::Exp, s), {dim}, /*keepdim=*/true));
  args.set_output(0, cast(cx, binary(cx, Op::Sub, s, log_sum), softmax_output_dtype(args, x)));
}

// Outputs (out, mean, rstd); mean and rstd keep the normalized dims with size 1, as torch.
void translate_native_layer_norm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  USER_CHECK(ir::is_floating(x.dtype)) << "layer_norm of a " << ir::dtype_name(x.dtype) << " tensor";
  const std::vector<ir::Expr> normalized = args.sym_ints("normalized_shape");
  const int k = static_cast<int>(normalized.size());
  USER_CHECK(k >= 1 && k <= x.rank()) << "normalized_shape " << shape_to_string(normalized)
                                      << " does not fit an input of shape " << shape_to_string(x.shape());
  std::vector<int> axes;
  ir::Expr count(int64_t{1});
  for (int i = 0; i < k; ++i) {
    const int axis = x.rank() - k + i;
    const ir::Expr& size = x.shape()[axis];
    USER_CHECK(size == normalized[i] || !(size.is_constant() && normalized[i].is_constant()))
        << "normalized_shape " << shape_to_string(normalized) << " does not match the input's trailing dims "
        << shape_to_string(x.shape());
    axes.push_back(axis);
    count = count * size;
  }
  const DType compute = compute_dtype(x.dtype);
  Tensor xf = cast(cx, x, compute);
  Tensor n = size_value(cx, count, compute);
  Tensor mean = binary(cx, Op::Div, reduce(cx, Op::SumReduce, xf, axes, true), n);
  Tensor centered = binary(cx, Op::Sub, xf, mean);
  Tensor var = binary(cx, Op::Div, reduce(cx, Op::SumReduce, binary(cx, Op::Mul, centered, centered), axes, true), n);
  const double eps = args.floating("eps");
  Tensor rstd = unary(cx, Op::Recip, unary(cx, Op::Sqrt, binary(cx, Op::Add, var, number(cx, eps, compute))));
  Tensor out = binary(cx, Op::Mul, centered, rstd);
  if (std::optional<Tensor> w = args.optional_tensor("weight")) out = binary(cx, Op::Mul, out, cast(cx, *w, compute));
  if (std::optional<Tensor> b = args.optional_tensor("bias")) out = binary(cx, Op::Add, out, cast(cx, *b, compute));
  args.set_output(0, cast(cx, out, x.dtype));
  if (!args.output_name(1).empty()) args.set_output(1, cast(cx, mean, args.output_dtype(1)));
  if (!args.output_name(2).empty()) args.set_output(2, cast(cx, rstd, args.output_dtype(2)));
}

// GPT-2 uses approximate="tanh", BERT the exact erf form; formulas as in torch's CPU kernel.
void translate_gelu(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "gelu of a " << ir::dtype_name(x.dtype) << " tensor";
  const std::string approximate = args.string("approximate");
  const DType c = compute_dtype(x.dtype);
  Tensor xf = cast(cx, x, c);
  Tensor inner;
  if (approximate == "none") {
    inner = unary(cx, Op::Erf, binary(cx, Op::Mul, xf, number(cx, M_SQRT1_2, c)));
  } else {
    USER_CHECK(approximate == "tanh") << "gelu approximate must be 'none' or 'tanh', got '" << approximate << "'";
    const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    Tensor cube = binary(cx, Op::Mul, binary(cx, Op::Mul, xf, xf), xf);
    Tensor poly = binary(cx, Op::Add, xf, binary(cx, Op::Mul, cube, number(cx, kappa, c)));
    inner = unary(cx, Op::Tanh, binary(cx, Op::Mul, poly, number(cx, beta, c)));
  }
  Tensor half_x = binary(cx, Op::Mul, xf, number(cx, 0.5, c));
  Tensor out = binary(cx, Op::Mul, half_x, binary(cx, Op::Add, inner, number(cx, 1.0, c)));
  args.set_output(0, cast(cx, out, x.dtype));
}

// native_dropout(input, p, train): (input * keep / (1 - p), keep). keep is drawn by torch's own
// bernoulli(input, 1 - p) through the ATen fallback, as eager's CPU kernel draws it, so that
// torch.manual_seed governs the masks; the scaling fuses with what reads it. One draw serves
// both results: an op with two results run through the fallback would draw twice, and the
// backward's mask would not be the forward's.
void translate_native_dropout(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  USER_CHECK(ir::is_floating(x.dtype)) << "dropout of a " << ir::dtype_name(x.dtype) << " tensor";
  const double p = args.floating("p");
  USER_CHECK(p >= 0 && p <= 1) << "dropout probability has to be between 0 and 1, but got " << p;
  const bool train = args.is_none("train") || args.boolean("train");
  const DType mask_dtype = args.output_dtype(1);
  Tensor keep;
  if (!train || p == 0) {
    keep = constant(cx, ir::Scalar::of_int(1), mask_dtype, x.shape());
  } else if (p == 1) {
    keep = constant(cx, ir::Scalar::of_int(0), mask_dtype, x.shape());
  } else {
    ir::AtenArg self, probability, generator;
    self.name = "self";
    self.kind = ir::AtenArg::Kind::Tensor;
    self.tensors = {0};
    probability.name = "p";
    probability.kind = ir::AtenArg::Kind::Float;
    probability.floats = {1 - p};
    generator.name = "generator";
    Tensor draw = call_aten(cx, "aten::bernoulli.p", {self, probability, generator}, {x}, x.dtype, x.shape(),
                            "native_dropout's random mask");
    keep = cast(cx, draw, mask_dtype);
  }
  if (train) {
    // As eager: a scale of 0 for p = 1, so that NaN and inf inputs stay NaN.
    Tensor kept = binary(cx, Op::Mul, x, cast(cx, keep, x.dtype));
    args.set_output(0, binary(cx, Op::Mul, kept, number(cx, p < 1 ? 1 / (1 - p) : 0.0, x.dtype)));
  } else {
    args.set_output(0, x);
  }
  if (!args.output_name(1).empty()) args.set_output(1, keep);
}

void translate_silu(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "silu of a " << ir::dtype_name(x.dtype) << " tensor";
  Tensor xf = cast(cx, x, compute_dtype(x.dtype));
  args.set_output(0, cast(cx, binary(cx, Op::Mul, xf, unary(cx, Op::Sigmoid, xf)), x.dtype));
}

namespace {
// x reshaped to [.., 1 (channel C), 1, ..] for per-channel affine params of an [N, C, ...] input.
Tensor per_channel(TranslationContext& cx, const Tensor& param, int rank, DType dtype) {
  Tensor p = cast(cx, param, dtype);
  for (int d = 2; d < rank; ++d) p = unsqueeze(p, p.rank());
  return p;
}
}  // namespace

// GroupNorm: statistics over each group of C/G channels and all spatial positions. Outputs
// (out, mean [N, G], rstd [N, G]); f16/bf16 compute in f32.
void translate_native_group_norm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("input");
  USER_CHECK(ir::is_floating(x.dtype)) << "group_norm of a " << ir::dtype_name(x.dtype) << " tensor";
  USER_CHECK(x.rank() >= 2) << "group_norm needs an [N, C, ...] input, got " << shape_to_string(x.shape());
  const int64_t groups = args.integer("group");
  const ir::Expr n = x.shape()[0];
  const DType c = compute_dtype(x.dtype);
  // The group's element count spelled out, not inferred (-1): an empty batch has no numel to
  // infer it from.
  ir::Expr count = floordiv(x.shape()[1], ir::Expr(groups));
  for (int d = 2; d < x.rank(); ++d) count = count * x.shape()[d];
  Tensor grouped = reshape(cx, cast(cx, x, c), {n, ir::Expr(groups), count});
  Tensor size = size_value(cx, count, c);
  Tensor mean = binary(cx, Op::Div, reduce(cx, Op::SumReduce, grouped, {2}, true), size);
  Tensor centered = binary(cx, Op::Sub, grouped, mean);
  Tensor var = binary(cx, Op::Div, reduce(cx, Op::SumReduce, binary(cx, Op::Mul, centered, centered), {2}, true), size);
  Tensor rstd = unary(cx, Op::Recip, unary(cx, Op::Sqrt, binary(cx, Op::Add, var, number(cx, args.floating("eps"), c))));
  Tensor out = reshape(cx, binary(cx, Op::Mul, centered, rstd), x.shape());
  if (std::optional<Tensor> w = args.optional_tensor("weight")) out = binary(cx, Op::Mul, out, per_channel(cx, *w, x.rank(), c));
  if (std::optional<Tensor> b = args.optional_tensor("bias")) out = binary(cx, Op::Add, out, per_channel(cx, *b, x.rank(), c));
  args.set_output(0, cast(cx, out, x.dtype));
  if (!args.output_name(1).empty()) args.set_output(1, cast(cx, squeeze(mean, 2), args.output_dtype(1)));
  if (!args.output_name(2).empty()) args.set_output(2, cast(cx, squeeze(rstd, 2), args.output_dtype(2)));
}

namespace {

// The input of an [N, C, ...] batch norm, checked.
Tensor batch_norm_input(NodeArgs& args) {
  Tensor x = args.tensor("input");
  USER_CHECK(ir::is_floating(x.dtype)) << "batch_norm of a " << ir::dtype_name(x.dtype) << " tensor";
  USER_CHECK(x.rank() >= 2) << "batch_norm needs an [N, C, ...] input, got " << shape_to_string(x.shape());
  return x;
}

// (x - mean) * rstd * weight + bias over channel dim 1, in the compute dtype, rounded to x's.
Tensor normalize_channels(NodeArgs& args, const Tensor& x, const Tensor& mean, const Tensor& rstd) {
  TranslationContext& cx = args.cx();
  const DType c = compute_dtype(x.dtype);
  const int rank = x.rank();
  Tensor out = binary(cx, Op::Mul, binary(cx, Op::Sub, cast(cx, x, c), per_channel(cx, mean, rank, c)),
                      per_channel(cx, rstd, rank, c));
  if (std::optional<Tensor> w = args.optional_tensor("weight")) out = binary(cx, Op::Mul, out, per_channel(cx, *w, rank, c));
  if (std::optional<Tensor> b = args.optional_tensor("bias")) out = binary(cx, Op::Add, out, per_channel(cx, *b, rank, c));
  return cast(cx, out, x.dtype);
}

Tensor inverse_std(TranslationContext& cx, const Tensor& var, double eps) {
  return unary(cx, Op::Recip, unary(cx, Op::Sqrt, binary(cx, Op::Add, var, number(cx, eps, var.dtype))));
}

// Eval mode: normalised by the running statistics. The saved mean/invstd outputs are empty, as
// in torch.
void batch_norm_eval(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = batch_norm_input(args);
  const DType c = compute_dtype(x.dtype);
  Tensor rstd = inverse_std(cx, cast(cx, args.tensor("running_var"), c), args.floating("eps"));
  args.set_output(0, normalize_channels(args, x, args.tensor("running_mean"), rstd));
  for (size_t i = 1; i < 3; ++i)
    if (!args.output_name(i).empty()) args.set_output(i, constant(cx, ir::Scalar::of_int(0), args.output_dtype(i), {ir::Expr(int64_t{0})}));
}

// Training mode: normalised by the batch's statistics over every dim but the channel. Outputs
// (out, mean [C], rstd [C]) with the biased variance, as torch. Returns the running statistics
// updated with `momentum` (the variance unbiased), in their compute dtype, when the op has them.
std::optional<std::pair<Tensor, Tensor>> batch_norm_training(NodeArgs& args, bool running_stats) {
  TranslationContext& cx = args.cx();
  Tensor x = batch_norm_input(args);
  const DType c = compute_dtype(x.dtype);
  std::vector<int> axes = {0};
  ir::Expr count = x.shape()[0];
  for (int d = 2; d < x.rank(); ++d) {
    axes.push_back(d);
    count = count * x.shape()[d];
  }
  // The statistics on x with H and W (every dim after C) viewed as one, as merge_reduced_dims says.
  const MergedReduction merged = merge_reduced_dims(x, axes);
  Tensor xf = cast(cx, merged.input, c);
  Tensor n = size_value(cx, count, c);
  Tensor merged_mean = binary(cx, Op::Div, reduce(cx, Op::SumReduce, xf, merged.axes, true), n);
  Tensor centered = binary(cx, Op::Sub, xf, merged_mean);
  Tensor squares =
      merged.restore(reduce(cx, Op::SumReduce, binary(cx, Op::Mul, centered, centered), merged.axes, true), false);
  Tensor mean = merged.restore(merged_mean, /*keepdim=*/false);
  Tensor rstd = inverse_std(cx, binary(cx, Op::Div, squares, n), args.floating("eps"));
  args.set_output(0, normalize_channels(args, x, mean, rstd));
  if (!args.output_name(1).empty()) args.set_output(1, cast(cx, mean, args.output_dtype(1)));
  if (!args.output_name(2).empty()) args.set_output(2, cast(cx, rstd, args.output_dtype(2)));
  if (!running_stats) return std::nullopt;
  const double momentum = args.floating("momentum");
  const auto update = [&](const Tensor& running, const Tensor& batch) {
    const DType t = compute_dtype(running.dtype);
    Tensor kept = binary(cx, Op::Mul, cast(cx, running, t), number(cx, 1.0 - momentum, t));
    return binary(cx, Op::Add, kept, binary(cx, Op::Mul, cast(cx, batch, t), number(cx, momentum, t)));
  };
  Tensor unbiased = binary(cx, Op::Div, squares, binary(cx, Op::Sub, n, number(cx, 1.0, c)));
  return std::make_pair(update(args.tensor("running_mean"), mean), update(args.tensor("running_var"), unbiased));
}

}  // namespace

void translate_native_batch_norm_legit_no_training(NodeArgs& args) { batch_norm_eval(args); }

// The running statistics are its arguments, updated in place in training mode: later readers of
// them and the caller's buffers see the new values (TranslationContext::mutate_input). Export's
// functional graphs carry _native_batch_norm_legit_functional instead; this form reaches luminal
// only in an archive written without functionalisation.
void translate_native_batch_norm_legit(NodeArgs& args) {
  if (!args.boolean("training")) return batch_norm_eval(args);
  TranslationContext& cx = args.cx();
  const auto running = batch_norm_training(args, true);
  cx.mutate_input(args.raw("running_mean").tensors.at(0), cast(cx, running->first, args.tensor("running_mean").dtype));
  cx.mutate_input(args.raw("running_var").tensors.at(0), cast(cx, running->second, args.tensor("running_var").dtype));
}

// Training without running statistics (track_running_stats=False).
void translate_native_batch_norm_legit_no_stats(NodeArgs& args) {
  if (!args.boolean("training")) {
    USER_ERROR() << "batch_norm in eval mode without running statistics has nothing to normalise by";
  }
  batch_norm_training(args, false);
}

// What export writes for a BatchNorm in training mode: the updated running statistics are
// outputs 3 and 4 (the graph returns them as buffer mutations).
void translate_native_batch_norm_legit_functional(NodeArgs& args) {
  if (!args.boolean("training")) {
    batch_norm_eval(args);
    for (size_t i = 3; i < 5; ++i)
      if (!args.output_name(i).empty())
        args.set_output(i, cast(args.cx(), args.tensor(i == 3 ? "running_mean" : "running_var"), args.output_dtype(i)));
    return;
  }
  // torch returns them in their compute dtype (f32 for f16 statistics); the graph's copy into
  // the buffer rounds them.
  TranslationContext& cx = args.cx();
  const auto running = batch_norm_training(args, true);
  if (!args.output_name(3).empty()) args.set_output(3, cast(cx, running->first, args.output_dtype(3)));
  if (!args.output_name(4).empty()) args.set_output(4, cast(cx, running->second, args.output_dtype(4)));
}

}  // namespace luminal::translator
