"""Elementwise aten ops (arithmetic, math functions, logical/bitwise, where, clamp) through
torch.compile(backend=luminal) against eager, over every dtype torch supports for each op."""

from __future__ import annotations

import pytest
import torch

from op_harness import ALL, FLOATS, INTS, Case, bf16, f16, f32, f64, i8, i16, i32, i64, run_case, u8

BOOL = torch.bool
SIGNED = (i8, i16, i32, i64)
POSITIVE = ((0.1, 5.0),)


def t(values, dtype):
    return torch.tensor(values).to(dtype)


# Integer division cases with every sign combination (and u8's wrap-around of -7 to 249).
def _signed_division_inputs(dtype):
    if dtype.is_floating_point:
        return (t([-7.5, 7.5, -7.0, 7.0, 0.0, 5.25], dtype), t([2.0, -2.0, -2.0, 2.0, 3.0, -0.5], dtype))
    return (t([-7, 7, -7, 7, 0, 6], dtype), t([2, -2, -2, 2, 3, 3], dtype))


UNARY_FLOAT = [
    Case("exp", torch.exp),
    Case("log", torch.log, domains=POSITIVE),
    Case("sin", torch.sin),
    Case("cos", torch.cos),
    Case("tan", torch.tan, domains=((-1.4, 1.4),)),
    Case("tanh", torch.tanh),
    Case("erf", torch.erf, extra_inputs=[lambda d: (t([0.0, -0.0, 0.99999, 1.0, -1.0, 3.9, 4.0, 4.5, float("inf"), float("-inf"), float("nan")], d),)]),
    # Past the clamps of the generated kernels' e^-x: sigmoid is 1 above ~87.3, a denormal or 0
    # below ~-87.3, and keeps inf and NaN.
    Case("sigmoid", torch.sigmoid, extra_inputs=[lambda d: (t([87.0, 88.0, 89.0, 100.0, -87.0, -88.0, -88.5, -89.0, -100.0, float("inf"), float("-inf"), float("nan")], d),)]),
    Case("sqrt", torch.sqrt, domains=((0.0, 5.0),)),
    Case("rsqrt", torch.rsqrt, domains=POSITIVE),
    Case("reciprocal", torch.reciprocal, domains=POSITIVE),
    Case("expm1", torch.expm1, extra_inputs=[lambda d: (t([1e-6, -1e-5, 0.0, 30.0, -30.0], d),)] ),
    Case("log1p", torch.log1p, domains=((-0.9, 5.0),), extra_inputs=[lambda d: (t([1e-7, -1e-6, 0.0, 1e6], d),)]),
    Case("log2", torch.log2, domains=POSITIVE),
    Case("log10", torch.log10, domains=POSITIVE),
    Case("sinh", torch.sinh, extra_inputs=[lambda d: (t([1e-6, -1e-4, 0.0, 20.0], d),)]),
    Case("cosh", torch.cosh),
    Case("atan", torch.atan, extra_inputs=[lambda d: (t([0.0, 1.0, -1.0, 1e-6, 1e6, float("inf"), float("-inf"), float("nan")], d),)]),
    Case("asin", torch.asin, domains=((-1.0, 1.0),), extra_inputs=[lambda d: (t([1.0, -1.0, 0.0, 1.5], d),)]),
    Case("acos", torch.acos, domains=((-1.0, 1.0),), extra_inputs=[lambda d: (t([1.0, -1.0, 0.0, 1.5], d),)]),
    Case("asinh", torch.asinh, extra_inputs=[lambda d: (t([1e-7, -1e-5, 0.0, 1e4], d),)]),
    Case("acosh", torch.acosh, domains=((1.0, 5.0),)),
    Case("atanh", torch.atanh, domains=((-0.99, 0.99),), extra_inputs=[lambda d: (t([1e-7, -1e-5, 0.0], d),)]),
]

UNARY_SAME_DTYPE = [
    Case("abs", torch.abs),
    Case("neg", torch.neg),
    Case("floor", torch.floor),
    Case("ceil", torch.ceil),
    Case("round", torch.round, extra_inputs=[lambda d: (t([0.5, 1.5, 2.5, -0.5, -2.5], d) if d.is_floating_point else t([1, 2], d),)]),
    Case("trunc", torch.trunc),
    Case("sign", torch.sign, extra_inputs=[lambda d: (t([0.0, -0.0, float("nan"), 3.0], d) if d.is_floating_point else t([0, 1], d),)]),
    Case("relu", torch.relu),
    Case("isnan", torch.isnan, extra_inputs=[lambda d: (t([float("nan"), 1.0, float("inf")], d) if d.is_floating_point else t([0, 1], d),)]),
    Case("isinf", torch.isinf, extra_inputs=[lambda d: (t([float("nan"), float("-inf"), float("inf"), 2.0], d) if d.is_floating_point else t([0, 1], d),)]),
    Case("logical_not", torch.logical_not),
    Case("bitwise_not", torch.bitwise_not),
    Case("hardtanh", torch.nn.functional.hardtanh),
    Case("hardtanh_bounds", lambda x: torch.nn.functional.hardtanh(x, -2.0, 0.5)),
    Case("leaky_relu", torch.nn.functional.leaky_relu),
    Case("leaky_relu_slope", lambda x: torch.nn.functional.leaky_relu(x, 0.2)),
    Case("elu", torch.nn.functional.elu),
    Case("elu_alpha", lambda x: torch.nn.functional.elu(x, alpha=0.5)),
]

BINARY = [
    Case("add", torch.add, arity=2),
    Case("add_alpha", lambda a, b: torch.add(a, b, alpha=2), arity=2),
    Case("sub", torch.sub, arity=2),
    Case("sub_alpha", lambda a, b: torch.sub(a, b, alpha=3), arity=2),
    Case("mul", torch.mul, arity=2),
    Case("div", torch.div, arity=2, domains=(None, (1, 9))),
    Case("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), arity=2, domains=(None, (1, 9)),
         extra_inputs=[_signed_division_inputs]),
    Case("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), arity=2, domains=(None, (1, 9)),
         extra_inputs=[_signed_division_inputs]),
    Case("pow", torch.pow, arity=2, domains=((0.1, 3.0), (0, 3))),
    Case("maximum", torch.maximum, arity=2),
    Case("minimum", torch.minimum, arity=2),
    Case("fmod", torch.fmod, arity=2, domains=(None, (1, 9)), extra_inputs=[_signed_division_inputs]),
    Case("remainder", torch.remainder, arity=2, domains=(None, (1, 9)), extra_inputs=[_signed_division_inputs]),
    Case("atan2", torch.atan2, arity=2,
         extra_inputs=[lambda d: (t([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0], d), t([0.0, 0.0, -0.0, -0.0, 0.0, 0.0, -0.0, -0.0], d))
                       if d.is_floating_point else (t([0, 1, -1], d), t([0, 0, 0], d))]),
    Case("bitwise_and", torch.bitwise_and, arity=2, domains=((-100, 100), (-100, 100))),
    Case("bitwise_or", torch.bitwise_or, arity=2, domains=((-100, 100), (-100, 100))),
    Case("bitwise_xor", torch.bitwise_xor, arity=2, domains=((-100, 100), (-100, 100))),
    Case("logical_and", torch.logical_and, arity=2),
    Case("logical_or", torch.logical_or, arity=2),
    Case("logical_xor", torch.logical_xor, arity=2),
]

# Python numbers as the second operand: the .Scalar overloads and torch's wrapped-number promotion.
SCALAR = [
    Case("add_int", lambda x: x + 2),
    Case("add_float", lambda x: x + 2.5),
    Case("add_bool", lambda x: x + True),
    Case("sub_int", lambda x: x - 3),
    Case("rsub_float", lambda x: 1.5 - x),
    Case("mul_int", lambda x: x * 3),
    Case("mul_float", lambda x: x * 2.5),
    Case("div_int", lambda x: x / 2),
    Case("div_scalar_trunc", lambda x: torch.div(x, -2, rounding_mode="trunc")),
    Case("div_scalar_floor", lambda x: torch.div(x, -2, rounding_mode="floor")),
    Case("div_scalar_floor_float", lambda x: torch.div(x, 1.5, rounding_mode="floor")),
    Case("pow_2", lambda x: torch.pow(x, 2)),
    Case("pow_3", lambda x: torch.pow(x, 3), domains=((-4, 4),)),
    Case("pow_half", lambda x: torch.pow(x, 0.5), domains=((0.0, 5.0),)),
    Case("pow_float_int_input", lambda x: torch.pow(x, 1.5), domains=((0.0, 5.0),)),
    Case("pow_scalar_base", lambda x: torch.pow(2, x), domains=((0, 5),)),
    Case("pow_scalar_float_base", lambda x: torch.pow(1.5, x), domains=((0, 5),)),
    Case("fmod_scalar", lambda x: torch.fmod(x, 3)),
    Case("fmod_scalar_float", lambda x: torch.fmod(x, 1.5)),
    Case("remainder_scalar", lambda x: torch.remainder(x, -3)),
    Case("remainder_scalar_float", lambda x: torch.remainder(x, 2.5)),
    Case("bitwise_and_scalar", lambda x: torch.bitwise_and(x, 3)),
    Case("bitwise_or_scalar", lambda x: torch.bitwise_or(x, 4)),
    Case("bitwise_xor_scalar", lambda x: torch.bitwise_xor(x, 5)),
    Case("clamp", lambda x: torch.clamp(x, -2, 3)),
    Case("clamp_float", lambda x: torch.clamp(x, -2.5, 3.5)),
    Case("clamp_min", lambda x: torch.clamp(x, min=-1)),
    Case("clamp_max", lambda x: torch.clamp(x, max=2)),
    Case("clamp_min_method", lambda x: x.clamp_min(0)),
    Case("clamp_max_method", lambda x: x.clamp_max(0)),
    # The .Scalar overloads by name: dynamo writes `x * 2.5` as mul.Tensor with a wrapped number,
    # but decompositions in real models (and other exporters) write these.
    Case("mul_scalar_overload", lambda x: torch.ops.aten.mul.Scalar(x, 2.5)),
    Case("mul_scalar_overload_int", lambda x: torch.ops.aten.mul.Scalar(x, 3)),
    Case("sub_scalar_overload", lambda x: torch.ops.aten.sub.Scalar(x, 1.5, alpha=2)),
    Case("div_scalar_overload", lambda x: torch.ops.aten.div.Scalar(x, 4)),
    Case("div_scalar_mode_overload", lambda x: torch.ops.aten.div.Scalar_mode(x, -3, rounding_mode="floor")),
    Case("div_scalar_mode_trunc_overload", lambda x: torch.ops.aten.div.Scalar_mode(x, 2.5, rounding_mode="trunc")),
]

TERNARY_VARIANTS = {
    "same": (lambda m: m((3, 4)), lambda m: m((3, 4)), lambda m: m((3, 4))),
    "broadcast": (lambda m: m((3, 1)), lambda m: m((1, 4)), lambda m: m(())),
    "noncontiguous": (lambda m: m((4, 3)).t(), lambda m: m((3, 8))[:, ::2], lambda m: m((1, 4)).expand(3, 4)),
    "empty": (lambda m: m((0, 4)), lambda m: m((4,)), lambda m: m((1,))),
}

OTHER = [
    Case("where", lambda c, a, b: torch.where(c > 0, a, b), arity=3, variants=TERNARY_VARIANTS, short=("same", "broadcast")),
    Case("where_scalar", lambda c, a, b: torch.where(c > 0, a, 0), arity=3, variants=TERNARY_VARIANTS, short=("same",)),
    Case("clamp_tensor", lambda x, lo, hi: torch.clamp(x, lo, torch.maximum(lo, hi)), arity=3, variants=TERNARY_VARIANTS,
         short=("same", "broadcast")),
    Case("clamp_tensor_min", lambda x, lo, hi: torch.clamp(x, min=lo), arity=3, variants=TERNARY_VARIANTS, short=("same",)),
    Case("masked_fill", lambda x, m, v: x.masked_fill(m > 0, 7), arity=3, variants=TERNARY_VARIANTS, short=("same",)),
]


# Mixed dtypes: the result dtype must be torch's (promote_types for dimensioned tensors, 0-d
# tensors and Python numbers only across categories).
def _mixed(pairs):
    return [lambda _d, a=a, b=b, sa=sa, sb=sb: (torch.ones(sa).to(a) * 3, torch.ones(sb).to(b) * 2) for a, b, sa, sb in pairs]


MIXED_PAIRS = [
    (i32, f16, (2, 3), (2, 3)),
    (u8, i8, (2, 3), (2, 3)),
    (torch.bool, i64, (2, 3), (3,)),
    (f16, bf16, (2, 3), (2, 3)),
    (i64, f64, (2, 3), ()),
    (f32, f64, (2, 3), ()),
    (i8, i64, (2, 3), ()),
    (u8, torch.bool, (2, 3), (2, 3)),
    (i16, f32, (), (2, 3)),
    (bf16, i32, (2, 3), (2, 3)),
]
PROMOTION = [
    Case(f"{name}_mixed", fn, dtypes=(f32,), arity=2, variants={}, extra_inputs=_mixed(MIXED_PAIRS))
    for name, fn in [
        ("add", torch.add),
        ("sub", lambda a, b: torch.sub(a.to(torch.int64) if a.dtype == torch.bool else a, b)),
        ("mul", torch.mul),
        ("div", torch.div),
        ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
        ("maximum", torch.maximum),
        ("pow", torch.pow),
        ("fmod", torch.fmod),
        ("eq", torch.eq),
        ("lt", torch.lt),
        ("where", lambda a, b: torch.where(a > 2, a, b)),
        ("atan2", torch.atan2),
    ]
]


@pytest.mark.parametrize("case", UNARY_FLOAT, ids=str)
def test_unary_float(case):
    run_case(case)


@pytest.mark.parametrize("case", UNARY_SAME_DTYPE, ids=str)
def test_unary(case):
    run_case(case)


@pytest.mark.parametrize("case", BINARY, ids=str)
def test_binary(case):
    run_case(case)


@pytest.mark.parametrize("case", SCALAR, ids=str)
def test_scalar_operand(case):
    run_case(case)


@pytest.mark.parametrize("case", OTHER, ids=str)
def test_ternary(case):
    run_case(case)


@pytest.mark.parametrize("case", PROMOTION, ids=str)
def test_promotion(case):
    run_case(case)


# ---- regressions for bugs upstream luminal's translator had (research/upstream-luminal.md §2) ----


def test_clamp_integer_input_stays_integer():
    """Upstream clamped through f32 and asserted on Int inputs (Qwen3-MoE's cache_position)."""
    run_case(Case("clamp_int_regression", lambda x: torch.clamp(x, 0, 2**40), dtypes=(i64, i32),
                  extra_inputs=[lambda d: (t([-(2**31) + 1, 2**31 - 1, 5], d),)]))


def test_bitwise_on_integers_not_only_bools():
    """Upstream lowered | and & as logical ops on bools only; integers need real bitwise ops."""
    run_case(Case("bitwise_int_regression", lambda a, b: (a | b, a & b, a ^ b), dtypes=INTS + (torch.bool,), arity=2,
                  domains=((-128, 127), (-128, 127))))


def test_erf_precision():
    """Upstream approximated erf (A&S 7.1.28, error ~1.5e-7); eager's erf is exact to f32."""
    x = torch.linspace(-4, 4, 1001)
    run_case(Case("erf_precision", torch.erf, dtypes=(f32, f64), variants={}, extra_inputs=[lambda d: (x.to(d),)],
                  tolerance_scale=0.1))


@pytest.mark.parametrize("dtype", [f32, f64, bf16, f16], ids=str)
def test_cube_is_eagers_bit_for_bit_without_a_pow_call(dtype, tmp_path):
    """ATen computes x ** 3 as x * x * x (f16 in f32); so does luminal, exactly. As a call to
    pow it kept the whole fused loop scalar (GELU-tanh's backward, tanhf included)."""
    import luminal  # noqa: F401  (registers the backend)

    x = (torch.randn(4, 1000, generator=torch.Generator().manual_seed(0)) * 4).to(dtype)
    compiled = torch.compile(lambda t: torch.pow(t, 3.0), backend="luminal", options={"debug_dir": str(tmp_path)})
    assert torch.equal(compiled(x), torch.pow(x, 3.0))
    kernels = [p.read_text().split("extern \"C\" int64_t", 1)[1] for p in tmp_path.glob("kernels_*.cpp")]
    assert kernels and not any("pow" in k for k in kernels), "the kernel calls pow"


def test_bf16_masked_fill_keeps_the_bits_it_copies(tmp_path):
    """A bf16 value that is only selected (masked_fill, where, a copy) is stored as its bits, as
    eager copies them: a signalling NaN's payload too, which rounding through f32 quietened."""
    import luminal  # noqa: F401  (registers the backend)

    bits = torch.tensor([0x7F81, 0xFF81, 0x7FC0, 0x3F80, 0x0001, 0x8000, 0x7F80, 0xFF80] * 8, dtype=torch.int32)
    bits = bits.to(torch.uint16).view(torch.int16)
    x = bits.view(torch.bfloat16).reshape(8, 8)[:, ::2]  # strided too
    keep = torch.arange(4) <= torch.arange(8).unsqueeze(1) % 4

    def fill(x, keep):
        return x.masked_fill(~keep, float("-inf")), torch.where(keep, x, x.flip(0))

    compiled = torch.compile(fill, backend="luminal", options={"debug_dir": str(tmp_path)})
    for got, want in zip(compiled(x, keep), fill(x, keep)):
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (got.view(torch.int16), want.view(torch.int16))
    kernels = [p.read_text().split("extern \"C\" int64_t", 1)[1] for p in tmp_path.glob("kernels_*.cpp")]
    assert kernels and all("lm_f2bf(" not in k for k in kernels), "a selected bf16 value is rounded again"
