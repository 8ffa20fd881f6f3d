"""Comparison ops (eq/ne/lt/le/gt/ge, Tensor and Scalar overloads) against eager in every dtype:
both sides promote to their common dtype first, the result is bool."""

from __future__ import annotations

import pytest
import torch

from op_harness import Case, run_case

NAN_INPUTS = [
    lambda d: (torch.tensor([float("nan"), 1.0, float("inf"), -0.0]).to(d), torch.tensor([float("nan"), float("nan"), float("inf"), 0.0]).to(d))
    if d.is_floating_point
    else (torch.tensor([1, 2]).to(d), torch.tensor([2, 2]).to(d))
]

TENSOR = [Case(name, getattr(torch, name), arity=2, extra_inputs=NAN_INPUTS) for name in ("eq", "ne", "lt", "le", "gt", "ge")]

SCALAR = [
    Case(f"{name}_{kind}", lambda x, f=getattr(torch, name), v=value: f(x, v))
    for name in ("eq", "ne", "lt", "le", "gt", "ge")
    for kind, value in (("int", 1), ("float", 0.5))
]


@pytest.mark.parametrize("case", TENSOR, ids=str)
def test_compare_tensor(case):
    run_case(case)


@pytest.mark.parametrize("case", SCALAR, ids=str)
def test_compare_scalar(case):
    run_case(case)


def test_compare_mixed_dtypes():
    """u8 vs i8 (promotes to i16, so 200 > -1), int vs float, bool vs int, 0-d f64 vs f32."""
    pairs = [
        (torch.tensor([200, 0, 5], dtype=torch.uint8), torch.tensor([-1, 0, 5], dtype=torch.int8)),
        (torch.tensor([1, 2, 3], dtype=torch.int32), torch.tensor([1.5, 2.0, 2.5], dtype=torch.float16)),
        (torch.tensor([True, False, True]), torch.tensor([1, 1, 0], dtype=torch.int64)),
        (torch.tensor([1.0, 2.0, 3.0]), torch.tensor(2.0, dtype=torch.float64)),
    ]
    run_case(Case("compare_mixed", lambda a, b: (a == b, a < b, a >= b, a != b), dtypes=(torch.float32,), arity=2,
                  variants={}, extra_inputs=[lambda _d, p=p: p for p in pairs]))
