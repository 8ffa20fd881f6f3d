"""Tensor factories (arange, full, zeros/ones(_like), empty, scalar_tensor, fill) against eager in
every dtype. Each case mixes the factory with its input so the graph is not empty."""

from __future__ import annotations

import pytest
import torch

from op_harness import ALL, Case, run_case

V = {"2d": (lambda m: m((3, 4)),), "transposed": (lambda m: m((4, 3)).t(),)}


def ccase(name, fn, **kw):
    return Case(name, fn, variants=V, short=("2d",), **kw)


CASES = [
    ccase("zeros_like", lambda x: (torch.zeros_like(x), x)),
    ccase("ones_like", lambda x: torch.ones_like(x)),
    ccase("full_like", lambda x: torch.full_like(x, 7)),
    ccase("full_like_dtype", lambda x: torch.full_like(x, 2.5, dtype=torch.float32)),
    ccase("empty_like_shape", lambda x: torch.empty_like(x).shape[0] + x),
    ccase("full", lambda x: x + torch.full((3, 4), 3, dtype=x.dtype)),
    ccase("full_default_dtype", lambda x: (torch.full((2,), 1.5), torch.full((2,), 4), torch.full((2,), True), x)),
    ccase("zeros", lambda x: x + torch.zeros(4, dtype=x.dtype)),
    ccase("ones", lambda x: x * torch.ones(3, 1, dtype=x.dtype)),
    ccase("arange", lambda x: x + torch.arange(4).to(x.dtype)),
    ccase("arange_start_step", lambda x: (torch.arange(1, 10, 3), torch.arange(5, 0, -2), x)),
    ccase("arange_float", lambda x: (torch.arange(0.0, 1.0, 0.125), torch.arange(-1, 2, 0.5, dtype=torch.float64), x)),
    ccase("arange_dtype", lambda x: torch.arange(4, dtype=x.dtype) + x),
    # Regressions (OpInfo): bool bounds are 0/1; an integer result of float bounds truncates them
    # (int64 also takes its length from the truncated bounds, narrower ints from the float ones).
    ccase("arange_bool_bounds", lambda x: (torch.arange(False, True, True, dtype=torch.float32), x)),
    ccase("arange_int_of_float_bounds", lambda x: (
        torch.arange(0.0, -8.000001, -4.0, dtype=torch.int64), torch.arange(-0.9, 2.1, 2.0, dtype=torch.int64),
        torch.arange(2.1, -2.9, -1.0, dtype=torch.int64), torch.arange(1.0, 5.000001, 2.0, dtype=torch.int32), x)),
    ccase("scalar_tensor", lambda x: torch.where(x > 0, x, torch.scalar_tensor(-3, dtype=x.dtype))),
    ccase("new_full", lambda x: x.new_full((2, 2), 5)),
    ccase("new_zeros", lambda x: (x.new_zeros(3), x.new_ones(2, 1))),
    ccase("fill", lambda x: x.clone().fill_(1)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_creation(case):
    run_case(case)
