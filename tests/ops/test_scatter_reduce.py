"""scatter_reduce.two (sum, prod, mean, amax, amin; include_self both ways) against eager in every
dtype torch's CPU kernel takes: indices with repeats and untouched positions, an index smaller
than self and src in the other dims, non-contiguous self/src; integer mean rounds down as
torch's does; on bools sum/amax are a logical or and prod/amin a logical and."""

from __future__ import annotations

import pytest
import torch

from op_harness import FLOATS, INTS, Case, run_case


def index(shape, high, seed):
    return lambda m: torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


V0 = {  # (self, index, src), scatter along dim 0
    "2d": (lambda m: m((4, 6)), index((5, 6), 4, 0), lambda m: m((5, 6))),
    "smaller_index": (lambda m: m((4, 6)), index((3, 4), 4, 1), lambda m: m((5, 7))),
    "noncontiguous": (lambda m: m((6, 4)).t(), index((5, 6), 4, 2), lambda m: m((6, 10))[:, ::2].t()),
}
V1 = {  # along the last dim of a 3d self
    "3d": (lambda m: m((2, 3, 5)), index((2, 3, 7), 5, 3), lambda m: m((2, 3, 7))),
    "smaller_index": (lambda m: m((2, 4, 5)), index((1, 3, 4), 5, 4), lambda m: m((2, 3, 6))),
}

CASES = []
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        suffix = "" if include_self else "_exclude_self"
        CASES.append(Case(f"scatter_reduce_{reduce}{suffix}",
                          lambda s, i, src, r=reduce, inc=include_self: s.scatter_reduce(0, i, src, r, include_self=inc),
                          dtypes=FLOATS + INTS + (torch.bool,), variants=V0, short=("noncontiguous",), domains=((-3, 3), None, (-3, 3))))
        CASES.append(Case(f"scatter_reduce_dim2_{reduce}{suffix}",
                          lambda s, i, src, r=reduce, inc=include_self: s.scatter_reduce(2, i, src, r, include_self=inc),
                          dtypes=(torch.float32, torch.int64), variants=V1, domains=((-3, 3), None, (-3, 3))))


# The deprecated scatter(..., reduce='add'|'multiply') forms (scatter.reduce with a src tensor,
# scatter.value_reduce with a number): scatter_reduce sum/prod with include_self (OpInfo).
for reduce in ("add", "multiply"):
    CASES.append(Case(f"scatter_legacy_{reduce}", lambda s, i, src, r=reduce: s.scatter(0, i, src, reduce=r),
                      dtypes=FLOATS + INTS, variants=V0, short=("noncontiguous",), domains=((-3, 3), None, (-3, 3))))
    CASES.append(Case(f"scatter_legacy_value_{reduce}", lambda s, i, src, r=reduce: s.scatter(0, i, 2, reduce=r) + src[:1, :1],
                      dtypes=(torch.float32, torch.int64), variants=V0, domains=((-3, 3), None, (-3, 3))))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_scatter_reduce(case):
    run_case(case)


def test_nan_propagates_through_amax_and_amin():
    s = torch.tensor([1.0, 2.0, float("nan"), 4.0])
    src = torch.tensor([float("nan"), 5.0, -1.0, 3.0, 0.0])
    i = torch.tensor([0, 1, 1, 3, 3])
    run_case(Case("scatter_reduce_nan", lambda s, i, src: (s.scatter_reduce(0, i, src, "amax"),
                                                            s.scatter_reduce(0, i, src, "amin", include_self=False)),
                  dtypes=(torch.float32,), variants={}, extra_inputs=[lambda d: (s, i, src)]))


def test_zero_dim_self():
    """torch treats a 0-d self, index and src as rank 1 of size 1."""
    run_case(Case("scatter_reduce_0d", lambda s, i, src: (s.scatter_reduce(0, i, src, "sum"),
                                                           s.scatter_reduce(0, i, src, "amin", include_self=False)),
                  dtypes=(torch.float32,), variants={},
                  extra_inputs=[lambda d: (torch.tensor(2.0), torch.tensor(0), torch.tensor(-5.0))]))
