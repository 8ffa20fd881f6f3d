// Elementwise aten ops: arithmetic, math functions, comparisons, logical and bitwise ops.
// Promotion follows torch.result_type over the operands (numbers as wrapped scalars).
#include <cmath>
#include <functional>

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


Tensor number(TranslationContext& cx, double v, DType dtype) { return constant(cx, ir::Scalar::of_float(v), dtype); }

// The sign bit, -0.0 and -inf included: (x < 0) | (x == 0 & 1/x < 0). atan2 needs it to put
// atan2(+-0, -0) and atan2(y, -0) in the right quadrant, as C's atan2 (and torch) do.
Tensor sign_bit(TranslationContext& cx, const Tensor& x) {
  Tensor zero = number(cx, 0.0, x.dtype);
  Tensor negative_zero = binary(cx, Op::And, binary(cx, Op::Eq, x, zero), binary(cx, Op::Lt, unary(cx, Op::Recip, x), zero));
  return binary(cx, Op::Or, binary(cx, Op::Lt, x, zero), negative_zero);
}

// The IR has no inverse trigonometric primitive (they are rare in models); atan is composed in
// f64 as libm does it: |x| > 1 maps to pi/2 - atan(1/|x|), two half-angle steps
// t / (1 + sqrt(1 + t^2)) bring |t| below tan(pi/16), where 12 terms of the odd Taylor series
// reach f64 precision. NaN propagates; +-inf gives +-pi/2.
Tensor atan_f64(TranslationContext& cx, const Tensor& x) {
  INTERNAL_CHECK(x.dtype == DType::F64) << "atan_f64 of " << ir::dtype_name(x.dtype);
  Tensor one = number(cx, 1.0, DType::F64);
  Tensor a = unary(cx, Op::Abs, x);
  Tensor inverted = binary(cx, Op::Lt, one, a);
  Tensor t = where(cx, inverted, unary(cx, Op::Recip, a), a);
  for (int i = 0; i < 2; ++i)
    t = binary(cx, Op::Div, t, binary(cx, Op::Add, one, unary(cx, Op::Sqrt, binary(cx, Op::Add, one, binary(cx, Op::Mul, t, t)))));
  Tensor t2 = binary(cx, Op::Mul, t, t);
  Tensor series = number(cx, 1.0 / 25.0, DType::F64);  // k = 12
  for (int k = 11; k >= 0; --k)
    series = binary(cx, Op::Add, binary(cx, Op::Mul, series, t2), number(cx, (k % 2 == 0 ? 1.0 : -1.0) / (2 * k + 1), DType::F64));
  Tensor r = binary(cx, Op::Mul, binary(cx, Op::Mul, series, t), number(cx, 4.0, DType::F64));
  r = where(cx, inverted, binary(cx, Op::Sub, number(cx, M_PI_2, DType::F64), r), r);
  return where(cx, binary(cx, Op::Lt, x, number(cx, 0.0, DType::F64)), unary(cx, Op::Neg, r), r);
}

// atan2(y, x) in f64 with C's quadrant rules (signed zeros included; both infinite is NaN here,
// where C gives +-pi/4 or +-3pi/4).
Tensor atan2_f64(TranslationContext& cx, const Tensor& y, const Tensor& x) {
  Tensor zero = number(cx, 0.0, DType::F64);
  Tensor both_zero = binary(cx, Op::And, binary(cx, Op::Eq, x, zero), binary(cx, Op::Eq, y, zero));
  Tensor base = atan_f64(cx, where(cx, both_zero, zero, binary(cx, Op::Div, y, x)));
  Tensor pi = where(cx, sign_bit(cx, y), number(cx, -M_PI, DType::F64), number(cx, M_PI, DType::F64));
  Tensor out = where(cx, sign_bit(cx, x), binary(cx, Op::Add, base, pi), base);
  // atan2(-0, +x) is -0; keep y's sign on a zero result.
  return where(cx, binary(cx, Op::Eq, out, zero), binary(cx, Op::Mul, y, zero), out);
}

// log1p and expm1 by Kahan's tricks: accurate to a few ulp in the working dtype without a
// primitive (log(1 + x) alone loses every digit of a tiny x).
Tensor log1p_of(TranslationContext& cx, const Tensor& x) {
  Tensor one = number(cx, 1.0, x.dtype);
  Tensor u = binary(cx, Op::Add, one, x);
  Tensor um1 = binary(cx, Op::Sub, u, one);
  Tensor log_u = unary(cx, Op::Log, u);
  Tensor scaled = binary(cx, Op::Mul, log_u, binary(cx, Op::Div, x, um1));
  // u == inf: inf/inf would be NaN; log(u) is right there.
  Tensor out = where(cx, binary(cx, Op::Eq, u, number(cx, INFINITY, x.dtype)), log_u, scaled);
  return where(cx, binary(cx, Op::Eq, um1, number(cx, 0.0, x.dtype)), x, out);
}

Tensor expm1_of(TranslationContext& cx, const Tensor& x) {
  Tensor one = number(cx, 1.0, x.dtype);
  Tensor u = unary(cx, Op::Exp, x);
  Tensor um1 = binary(cx, Op::Sub, u, one);
  Tensor scaled = binary(cx, Op::Mul, um1, binary(cx, Op::Div, x, unary(cx, Op::Log, u)));
  Tensor plain = binary(cx, Op::Or, binary(cx, Op::Eq, um1, number(cx, -1.0, x.dtype)),
                        binary(cx, Op::Eq, u, number(cx, INFINITY, x.dtype)));
  return where(cx, binary(cx, Op::Eq, u, one), x, where(cx, plain, um1, scaled));
}

// A float composition computed in `work` (f64 for the inverse and hyperbolic functions, whose
// compositions cancel) and rounded once to the op's result dtype (f32 for integer inputs).
void composed_unary(NodeArgs& args, DType work, const std::function<Tensor(TranslationContext&, const Tensor&)>& f) {
  TranslationContext& cx = args.cx();
  Tensor x = float_input(cx, args.tensor("self"));
  args.set_output(0, cast(cx, f(cx, cast(cx, x, work)), x.dtype));
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

// prims::fma(a, b, c): a * b + c with one rounding (the compiled AdamW's addcmul writes it).
// Computed one precision up: the product of two f32 or half values is exact there, so only the
// sum rounds, then the result; f64 has no wider type and rounds the product too.
void translate_prims_fma(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("a"), b = args.operand("b"), c = args.operand("c");
  const DType dtype = args.output_dtype(0);
  DType wide = dtype;
  if (dtype == DType::F32) wide = DType::F64;
  if (ir::is_half(dtype)) wide = DType::F32;
  Tensor product = binary(cx, Op::Mul, materialize(cx, a, wide), materialize(cx, b, wide));
  args.set_output(0, cast(cx, binary(cx, Op::Add, product, materialize(cx, c, wide)), dtype));
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
  // torch's trunc kernel divides in the tensors' own type (a bf16 quotient is rounded to bf16
  // before it is truncated); its floor kernel computes in float for f16/bf16 (div_floor_floating).
  const DType compute = mode == "trunc" ? dtype : compute_dtype(dtype);
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
    // x^3 as ATen's CPU kernel computes it, x * x * x: each product rounded in the dtype, except
    // f16, computed in f32 and rounded once. powf would also keep the whole fused loop scalar
    // (GELU-tanh's backward: 14% of a GPT-2 training step in scalar tanhf/powf).
    if (e == 3.0 && ir::is_floating(dtype)) {
      const Tensor base = dtype == DType::F16 ? cast(cx, x, DType::F32) : x;
      return args.set_output(0, cast(cx, binary(cx, Op::Mul, binary(cx, Op::Mul, base, base), base), dtype));
    }
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

// ---- composed math functions (no primitive of their own; see the helpers above) ----
void translate_expm1(NodeArgs& args) { composed_unary(args, DType::F64, expm1_of); }
void translate_log1p(NodeArgs& args) { composed_unary(args, DType::F64, log1p_of); }
void translate_log2(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    return binary(cx, Op::Mul, unary(cx, Op::Log, x), number(cx, 1.0 / M_LN2, x.dtype));
  });
}
void translate_log10(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    return binary(cx, Op::Mul, unary(cx, Op::Log, x), number(cx, 1.0 / M_LN10, x.dtype));
  });
}
void translate_tan(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    return binary(cx, Op::Div, unary(cx, Op::Sin, x), unary(cx, Op::Cos, x));
  });
}
// sinh = (expm1(x) - expm1(-x)) / 2 and cosh = (e^x + e^-x) / 2, in f64.
void translate_sinh(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    Tensor d = binary(cx, Op::Sub, expm1_of(cx, x), expm1_of(cx, unary(cx, Op::Neg, x)));
    return binary(cx, Op::Mul, d, number(cx, 0.5, x.dtype));
  });
}
void translate_cosh(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    Tensor s = binary(cx, Op::Add, unary(cx, Op::Exp, x), unary(cx, Op::Exp, unary(cx, Op::Neg, x)));
    return binary(cx, Op::Mul, s, number(cx, 0.5, x.dtype));
  });
}
void translate_atan(NodeArgs& args) { composed_unary(args, DType::F64, atan_f64); }
// asin(x) = atan2(x, sqrt((1 - x)(1 + x))), acos(x) = atan2(sqrt((1 - x)(1 + x)), x): NaN
// outside [-1, 1] from the sqrt, exact at +-1.
namespace {
Tensor cos_of_asin(TranslationContext& cx, const Tensor& x) {
  Tensor one = number(cx, 1.0, x.dtype);
  return unary(cx, Op::Sqrt, binary(cx, Op::Mul, binary(cx, Op::Sub, one, x), binary(cx, Op::Add, one, x)));
}
}  // namespace
void translate_asin(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) { return atan2_f64(cx, x, cos_of_asin(cx, x)); });
}
void translate_acos(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) { return atan2_f64(cx, cos_of_asin(cx, x), x); });
}
// asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); acosh(x) = log(x + sqrt(x^2 - 1));
// atanh(x) = log1p(2x / (1 - x)) / 2. The log1p forms keep small arguments accurate.
void translate_asinh(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    Tensor one = number(cx, 1.0, x.dtype);
    Tensor a = unary(cx, Op::Abs, x);
    Tensor x2 = binary(cx, Op::Mul, x, x);
    Tensor r = log1p_of(cx, binary(cx, Op::Add, a, binary(cx, Op::Div, x2, binary(cx, Op::Add, one, unary(cx, Op::Sqrt, binary(cx, Op::Add, one, x2))))));
    return where(cx, binary(cx, Op::Lt, x, number(cx, 0.0, x.dtype)), unary(cx, Op::Neg, r), r);
  });
}
void translate_acosh(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    Tensor root = unary(cx, Op::Sqrt, binary(cx, Op::Sub, binary(cx, Op::Mul, x, x), number(cx, 1.0, x.dtype)));
    return unary(cx, Op::Log, binary(cx, Op::Add, x, root));
  });
}
void translate_atanh(NodeArgs& args) {
  composed_unary(args, DType::F64, [](TranslationContext& cx, const Tensor& x) {
    Tensor ratio = binary(cx, Op::Div, binary(cx, Op::Add, x, x), binary(cx, Op::Sub, number(cx, 1.0, x.dtype), x));
    return binary(cx, Op::Mul, log1p_of(cx, ratio), number(cx, 0.5, x.dtype));
  });
}

void translate_atan2(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  DType dtype = result_type({a, b});
  if (!ir::is_floating(dtype)) dtype = DType::F32;
  Tensor y = materialize(cx, a, DType::F64), x = materialize(cx, b, DType::F64);
  args.set_output(0, cast(cx, atan2_f64(cx, y, x), dtype));
}

// sign: -1, 0 or 1 in the input's dtype; NaN gives 0 (torch's CPU kernel); bools are themselves.
void translate_sign(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  if (x.dtype == DType::Bool) return args.set_output(0, x);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), x.dtype);
  Tensor positive = cast(cx, binary(cx, Op::Lt, zero, x), x.dtype);
  Tensor negative = cast(cx, binary(cx, Op::Lt, x, zero), x.dtype);
  args.set_output(0, binary(cx, Op::Sub, positive, negative));
}

void translate_isinf(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  if (!ir::is_floating(x.dtype)) return args.set_output(0, constant(cx, ir::Scalar::of_int(0), DType::Bool, x.shape()));
  args.set_output(0, binary(cx, Op::Eq, unary(cx, Op::Abs, x), number(cx, INFINITY, x.dtype)));
}

// fmod: C semantics, the sign of the dividend (the Mod primitive); f16/bf16 in f32.
void translate_fmod(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  USER_CHECK(dtype != DType::Bool) << "fmod of bool tensors";
  const DType work = compute_dtype(dtype);
  args.set_output(0, cast(cx, binary(cx, Op::Mod, materialize(cx, a, work), materialize(cx, b, work)), dtype));
}

// remainder: Python's %, the sign of the divisor: fmod, plus the divisor where the signs differ.
void translate_remainder(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Operand a = args.operand("self"), b = args.operand("other");
  const DType dtype = result_type({a, b});
  USER_CHECK(dtype != DType::Bool) << "remainder of bool tensors";
  const DType work = compute_dtype(dtype);
  Tensor x = materialize(cx, a, work), y = materialize(cx, b, work);
  Tensor r = binary(cx, Op::Mod, x, y);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), work);
  Tensor adjust = binary(cx, Op::And, binary(cx, Op::Ne, r, zero),
                         binary(cx, Op::Ne, binary(cx, Op::Lt, r, zero), binary(cx, Op::Lt, y, zero)));
  args.set_output(0, cast(cx, where(cx, adjust, binary(cx, Op::Add, r, y), r), dtype));
}

// hardtanh(x, lo, hi) = clamp(x, lo, hi) in x's dtype.
void translate_hardtanh(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(x.dtype != DType::Bool) << "hardtanh of a bool tensor";
  Tensor lo = constant(cx, args.scalar("min_val"), x.dtype), hi = constant(cx, args.scalar("max_val"), x.dtype);
  args.set_output(0, binary(cx, Op::Min, binary(cx, Op::Max, x, lo), hi));
}

void translate_leaky_relu(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "leaky_relu of a " << ir::dtype_name(x.dtype) << " tensor";
  const DType c = compute_dtype(x.dtype);
  Tensor xf = cast(cx, x, c);
  Tensor neg = binary(cx, Op::Mul, xf, constant(cx, args.scalar("negative_slope"), c));
  args.set_output(0, cast(cx, where(cx, binary(cx, Op::Lt, number(cx, 0.0, c), xf), xf, neg), x.dtype));
}

// elu: scale * x for x > 0, else alpha * scale * expm1(x * input_scale).
void translate_elu(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "elu of a " << ir::dtype_name(x.dtype) << " tensor";
  const DType c = compute_dtype(x.dtype);
  Tensor xf = cast(cx, x, c);
  const double alpha = args.floating("alpha"), scale = args.floating("scale"), input_scale = args.floating("input_scale");
  Tensor neg = expm1_of(cx, binary(cx, Op::Mul, xf, number(cx, input_scale, c)));
  neg = binary(cx, Op::Mul, neg, number(cx, alpha * scale, c));
  Tensor pos = binary(cx, Op::Mul, xf, number(cx, scale, c));
  args.set_output(0, cast(cx, where(cx, binary(cx, Op::Lt, number(cx, 0.0, c), xf), pos, neg), x.dtype));
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
