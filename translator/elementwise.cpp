// Elementwise aten ops: arithmetic, math functions, comparisons, logical and bitwise ops.
// Promotion follows torch.result_type over the operands (numbers as wrapped scalars).
#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Op;

namespace {

// `self op other` in their promoted dtype; comparisons yield bool.
Tensor promoted_binary(NodeArgs& args, Op op, const Operand& a, const Operand& b) {
  TranslationContext& cx = args.cx();
  const DType dtype = result_type({a, b});
  return binary(cx, op, materialize(cx, a, dtype), materialize(cx, b, dtype));
}

void binary_handler(NodeArgs& args, Op op, bool swap = false) {
  Operand a = args.operand("self"), b = args.operand("other");
  if (swap) std::swap(a, b);
  args.set_output(0, promoted_binary(args, op, a, b));
}

// add/sub: self ± alpha * other.
void add_sub(NodeArgs& args, Op op) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  Tensor rhs = materialize(cx, b, dtype);
  const ir::Scalar alpha = args.scalar("alpha");
  if (alpha.as_double() != 1.0) {
    USER_CHECK(alpha.is_integer || ir::is_floating(dtype)) << "alpha must be an integer for integer inputs";
    rhs = binary(cx, Op::Mul, rhs, constant(cx, alpha, dtype));
  }
  if (dtype == DType::Bool) {
    // torch adds bools as logical or; subtraction of bools is an error.
    USER_CHECK(op == Op::Add) << "subtraction of bool tensors is not supported by torch either";
    args.set_output(0, binary(cx, Op::Or, materialize(cx, a, dtype), rhs));
    return;
  }
  args.set_output(0, binary(cx, op, materialize(cx, a, dtype), rhs));
}

// exp, sin, ...: integer and bool inputs compute in the default float dtype, as torch does.
Tensor float_input(TranslationContext& cx, const Tensor& t) {
  return ir::is_floating(t.dtype) ? t : cast(cx, t, DType::F32);
}

void float_unary(NodeArgs& args, Op op) {
  TranslationContext& cx = args.cx();
  args.set_output(0, unary(cx, op, float_input(cx, args.tensor("self"))));
}

void same_dtype_unary(NodeArgs& args, Op op) { args.set_output(0, unary(args.cx(), op, args.tensor("self"))); }

void logical_binary(NodeArgs& args, Op op) {
  TranslationContext& cx = args.cx();
  Tensor a = cast(cx, args.tensor("self"), DType::Bool);
  Tensor b = cast(cx, args.tensor("other"), DType::Bool);
  args.set_output(0, binary(cx, op, a, b));
}

void bitwise_binary(NodeArgs& args, Op op) {
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  USER_CHECK(!ir::is_floating(dtype)) << "bitwise ops need integer or bool operands, got " << ir::dtype_name(dtype);
  args.set_output(0, promoted_binary(args, op, a, b));
}

// clamp(x, min, max) = min(max(x, lo), hi), in the dtype promoted with the present bounds.
Tensor clamp_between(NodeArgs& args, const std::optional<Operand>& lo, const std::optional<Operand>& hi) {
  TranslationContext& cx = args.cx();
  const Operand self = args.operand("self");
  std::vector<Operand> operands{self};
  if (lo) operands.push_back(*lo);
  if (hi) operands.push_back(*hi);
  const DType dtype = result_type(operands);
  Tensor out = materialize(cx, self, dtype);
  if (lo) out = binary(cx, Op::Max, out, materialize(cx, *lo, dtype));
  if (hi) out = binary(cx, Op::Min, out, materialize(cx, *hi, dtype));
  return out;
}

// Floor division of integers from C's truncating Div: q - 1 where the remainder is non-zero and
// its sign differs from the divisor's (Python // semantics, which torch's "floor" mode uses).
Tensor integer_floor_div(TranslationContext& cx, const Tensor& a, const Tensor& b) {
  Tensor q = binary(cx, Op::Div, a, b);
  Tensor r = binary(cx, Op::Mod, a, b);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), a.dtype);
  Tensor inexact = binary(cx, Op::Ne, r, zero);
  Tensor signs_differ = binary(cx, Op::Ne, binary(cx, Op::Lt, r, zero), binary(cx, Op::Lt, b, zero));
  Tensor adjust = cast(cx, binary(cx, Op::And, inexact, signs_differ), a.dtype);
  return binary(cx, Op::Sub, q, adjust);
}

}  // namespace

// ---- arithmetic ----
void translate_add_tensor(NodeArgs& args) { add_sub(args, Op::Add); }
void translate_add_scalar(NodeArgs& args) { add_sub(args, Op::Add); }
void translate_sub_tensor(NodeArgs& args) { add_sub(args, Op::Sub); }
void translate_sub_scalar(NodeArgs& args) { add_sub(args, Op::Sub); }

void translate_mul(NodeArgs& args) {
  const Operand a = args.operand("self"), b = args.operand("other");
  // torch multiplies bools as logical and.
  args.set_output(0, promoted_binary(args, result_type({a, b}) == DType::Bool ? Op::And : Op::Mul, a, b));
}

// True division: integer and bool operands divide in the default float dtype.
void translate_div(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  DType dtype = result_type({a, b});
  if (!ir::is_floating(dtype)) dtype = DType::F32;
  args.set_output(0, binary(cx, Op::Div, materialize(cx, a, dtype), materialize(cx, b, dtype)));
}

// Qwen3-MoE routes tokens with div(..., rounding_mode="floor") on integer ids.
void translate_div_mode(NodeArgs& args) {
  if (args.is_none("rounding_mode")) return translate_div(args);
  TranslationContext& cx = args.cx();
  const std::string mode = args.string("rounding_mode");
  USER_CHECK(mode == "trunc" || mode == "floor") << "rounding_mode must be 'trunc', 'floor' or None, got '" << mode
                                                 << "'";
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  USER_CHECK(dtype != DType::Bool) << "division of bool tensors with a rounding mode";
  if (ir::is_integral(dtype)) {
    Tensor x = materialize(cx, a, dtype), y = materialize(cx, b, dtype);
    args.set_output(0, mode == "trunc" ? binary(cx, Op::Div, x, y) : integer_floor_div(cx, x, y));
    return;
  }
  const DType compute = compute_dtype(dtype);
  Tensor q = binary(cx, Op::Div, materialize(cx, a, compute), materialize(cx, b, compute));
  args.set_output(0, cast(cx, unary(cx, mode == "trunc" ? Op::Trunc : Op::Floor, q), dtype));
}

void translate_neg(NodeArgs& args) { same_dtype_unary(args, Op::Neg); }
void translate_abs(NodeArgs& args) { same_dtype_unary(args, Op::Abs); }

// pow(x, 2) is x * x and pow(x, 0.5) is sqrt(x) in torch's CPU kernel; doing the same keeps
// RMSNorm's variance bit-identical to eager.
void translate_pow_tensor_scalar(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand self = args.operand("self"), exponent = args.operand("exponent");
  const DType dtype = result_type({self, exponent});
  Tensor x = materialize(cx, self, dtype);
  if (exponent.is_number && !exponent.tensor) {
    const double e = exponent.scalar.as_double();
    if (e == 1.0) return args.set_output(0, x);
    if (e == 2.0) return args.set_output(0, binary(cx, Op::Mul, x, x));
    if (e == 0.5 && ir::is_floating(dtype)) return args.set_output(0, unary(cx, Op::Sqrt, x));
  }
  args.set_output(0, binary(cx, Op::Pow, x, materialize(cx, exponent, dtype)));
}

void translate_pow_tensor_tensor(NodeArgs& args) {
  const Operand a = args.operand("self"), b = args.operand("exponent");
  args.set_output(0, promoted_binary(args, Op::Pow, a, b));
}

void translate_pow_scalar(NodeArgs& args) {
  const Operand a = args.operand("self"), b = args.operand("exponent");
  args.set_output(0, promoted_binary(args, Op::Pow, a, b));
}

// ---- math functions ----
void translate_exp(NodeArgs& args) { float_unary(args, Op::Exp); }
void translate_log(NodeArgs& args) { float_unary(args, Op::Log); }
void translate_sin(NodeArgs& args) { float_unary(args, Op::Sin); }
void translate_cos(NodeArgs& args) { float_unary(args, Op::Cos); }
void translate_tanh(NodeArgs& args) { float_unary(args, Op::Tanh); }
void translate_erf(NodeArgs& args) { float_unary(args, Op::Erf); }
void translate_sigmoid(NodeArgs& args) { float_unary(args, Op::Sigmoid); }
void translate_sqrt(NodeArgs& args) { float_unary(args, Op::Sqrt); }
void translate_reciprocal(NodeArgs& args) { float_unary(args, Op::Recip); }
void translate_floor(NodeArgs& args) { same_dtype_unary(args, Op::Floor); }
void translate_ceil(NodeArgs& args) { same_dtype_unary(args, Op::Ceil); }
void translate_round(NodeArgs& args) { same_dtype_unary(args, Op::Round); }
void translate_trunc(NodeArgs& args) { same_dtype_unary(args, Op::Trunc); }
void translate_isnan(NodeArgs& args) { same_dtype_unary(args, Op::IsNan); }

// 1/sqrt(x), rounded once for f16/bf16 (Llama's RMSNorm in bf16).
void translate_rsqrt(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = float_input(cx, args.tensor("self"));
  Tensor y = unary(cx, Op::Recip, unary(cx, Op::Sqrt, cast(cx, x, compute_dtype(x.dtype))));
  args.set_output(0, cast(cx, y, x.dtype));
}

// relu = max(x, 0); NaN stays NaN as in torch.
void translate_relu(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(x.dtype != DType::Bool) << "relu of a bool tensor";
  args.set_output(0, binary(cx, Op::Max, x, constant(cx, ir::Scalar::of_int(0), x.dtype)));
}

// ---- clamping ----
void translate_clamp(NodeArgs& args) {
  std::optional<Operand> lo, hi;
  if (!args.is_none("min")) lo = args.operand("min");
  if (!args.is_none("max")) hi = args.operand("max");
  USER_CHECK(lo || hi) << "clamp needs at least one of 'min' and 'max'";
  args.set_output(0, clamp_between(args, lo, hi));
}
void translate_clamp_min(NodeArgs& args) { args.set_output(0, clamp_between(args, args.operand("min"), std::nullopt)); }
void translate_clamp_max(NodeArgs& args) { args.set_output(0, clamp_between(args, std::nullopt, args.operand("max"))); }
void translate_maximum(NodeArgs& args) { binary_handler(args, Op::Max); }
void translate_minimum(NodeArgs& args) { binary_handler(args, Op::Min); }

// ---- comparisons: both sides promote to their common dtype first ----
void translate_eq(NodeArgs& args) { binary_handler(args, Op::Eq); }
void translate_ne(NodeArgs& args) { binary_handler(args, Op::Ne); }
void translate_lt(NodeArgs& args) { binary_handler(args, Op::Lt); }
void translate_le(NodeArgs& args) { binary_handler(args, Op::Le); }
void translate_gt(NodeArgs& args) { binary_handler(args, Op::Lt, /*swap=*/true); }
void translate_ge(NodeArgs& args) { binary_handler(args, Op::Le, /*swap=*/true); }

// ---- logical and bitwise ----
void translate_logical_not(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  args.set_output(0, unary(cx, Op::Not, cast(cx, args.tensor("self"), DType::Bool)));
}
void translate_logical_and(NodeArgs& args) { logical_binary(args, Op::And); }
void translate_logical_or(NodeArgs& args) { logical_binary(args, Op::Or); }
void translate_logical_xor(NodeArgs& args) { logical_binary(args, Op::Xor); }
void translate_bitwise_and(NodeArgs& args) { bitwise_binary(args, Op::And); }
void translate_bitwise_or(NodeArgs& args) { bitwise_binary(args, Op::Or); }
void translate_bitwise_xor(NodeArgs& args) { bitwise_binary(args, Op::Xor); }

void translate_bitwise_not(NodeArgs& args) {
  Tensor x = args.tensor("self");
  USER_CHECK(!ir::is_floating(x.dtype)) << "bitwise_not of a " << ir::dtype_name(x.dtype) << " tensor";
  args.set_output(0, unary(args.cx(), Op::Not, x));
}

// ---- selection ----
void translate_where_self(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  Tensor cond = cast(cx, args.tensor("condition"), DType::Bool);
  args.set_output(0, where(cx, cond, materialize(cx, a, dtype), materialize(cx, b, dtype)));
}

// masked_fill keeps self's dtype (the fill value is converted), unlike where.
void translate_masked_fill_scalar(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  Tensor mask = args.tensor("mask");
  USER_CHECK(mask.dtype == DType::Bool) << "masked_fill mask must be bool, got " << ir::dtype_name(mask.dtype);
  Tensor value = materialize(cx, args.operand("value"), self.dtype);
  Tensor out = where(cx, mask, value, self);
  USER_CHECK(out.shape() == self.shape()) << "masked_fill mask " << shape_to_string(mask.shape())
                                          << " does not broadcast to " << shape_to_string(self.shape());
  args.set_output(0, out);
}

}  // namespace luminal::translator
