"""topk and sort against eager: every dtype torch supports, dims negative and 0, largest and
smallest, ascending and descending, 0-d, empty and non-contiguous inputs, NaN and inf.

torch leaves the order of equal values unspecified except for sort(stable=True) (its CPU topk
uses nth_element; its CPU sort is stable only up to 16 elements), so indices are compared
exactly on inputs without ties and on stable sorts; with ties, topk's values and the values its
indices point at are compared, and luminal's own rule (the lower index first) is checked
against a stable sort."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from conftest import CountingBackend
from op_harness import ALL, FLOATS, INTS, Case, f32, i64, run_case

NO_BOOL = FLOATS + INTS


def distinct(make, shape: Sequence[int]) -> torch.Tensor:
    """Pairwise different values of make's dtype in a random arrangement: small integers, exact in
    every dtype (a u8 wraps the negative ones, still all different)."""
    noise = make(shape).double().flatten()
    ranks = noise.argsort(stable=True).argsort().reshape(tuple(shape))
    return (ranks - noise.numel() // 2).to(make(()).dtype)


DISTINCT = {
    "2d": (lambda m: distinct(m, (3, 7)),),
    "3d": (lambda m: distinct(m, (2, 3, 5)),),
    "1d": (lambda m: distinct(m, (9,)),),
    "0d": (lambda m: distinct(m, ()),),
    "size1": (lambda m: distinct(m, (4, 1)),),
    "empty": (lambda m: distinct(m, (0, 5)),),
    "transposed": (lambda m: distinct(m, (7, 3)).t(),),
    "sliced": (lambda m: distinct(m, (3, 12))[:, 1::2],),
    "expanded": (lambda m: distinct(m, (1, 6)).expand(3, 6),),
}
# For a dim other than the last: the expanded input repeats its values along dim 0.
ALONG_DIM0 = {k: v for k, v in DISTINCT.items() if k not in ("expanded", "1d", "0d")}
# Random values: integers and bools repeat, so only stable sorts compare indices on them.
TIES = {
    "2d": (lambda m: m((3, 20)),),
    "3d": (lambda m: m((2, 3, 17)),),
    "0d": (lambda m: m(()),),
    "transposed": (lambda m: m((20, 3)).t(),),
    "sliced": (lambda m: m((3, 40))[:, ::2],),
    "expanded": (lambda m: m((4, 1)).expand(4, 18),),
}


def nonfinite(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    nan, inf = float("nan"), float("inf")
    return (torch.tensor([[1.0, nan, -inf, 3.0, inf, -2.0], [0.5, -inf, 2.5, -0.5, nan, 4.0]]).to(dtype),)


def scase(name, fn, variants=DISTINCT, dtypes=NO_BOOL, **kw):
    return Case(name, fn, dtypes=dtypes, variants=variants, short=("2d", "transposed"), **kw)


def _k(x: torch.Tensor, k: int) -> int:
    return min(k, x.shape[-1] if x.dim() else 1)


CASES = [
    scase("topk", lambda x: torch.topk(x, _k(x, 3))),
    scase("topk_k1", lambda x: x.topk(_k(x, 1))),
    scase("topk_all", lambda x: x.topk(_k(x, 99))),
    scase("topk_smallest_dim0", lambda x: x.topk(min(2, x.shape[0]) if x.dim() else 1, dim=0, largest=False),
          variants=ALONG_DIM0),
    scase("topk_dim_minus2", lambda x: torch.topk(x, 1, dim=-2), variants=ALONG_DIM0),
    # sorted=False leaves the order to the implementation: compare as sets.
    scase("topk_unsorted", lambda x: torch.topk(x, _k(x, 2), sorted=False).values.sort(-1).values),
    scase("topk_nonfinite", lambda x: (x.topk(3), x.topk(2, largest=False)), variants={}, dtypes=FLOATS,
          extra_inputs=[nonfinite]),
    scase("sort", lambda x: torch.sort(x), dtypes=ALL),
    scase("sort_descending_dim0", lambda x: x.sort(0, descending=True), dtypes=ALL),
    scase("argsort", lambda x: x.argsort(-1), dtypes=ALL),
    scase("sort_stable_ties", lambda x: torch.sort(x, stable=True), variants=TIES, dtypes=ALL),
    scase("sort_stable_descending_ties", lambda x: torch.sort(x, dim=-1, descending=True, stable=True),
          variants=TIES, dtypes=ALL),
    scase("sort_stable_dim0_ties", lambda x: torch.sort(x, dim=0, stable=True), variants=TIES, dtypes=ALL),
    # Two NaNs: stable puts them in index order, after +inf ascending and first descending.
    scase("sort_nonfinite",
          lambda x: (torch.sort(x, stable=True), torch.sort(x, descending=True, stable=True)), variants={}, dtypes=FLOATS, extra_inputs=[nonfinite]),
    # With ties only the values, and the values the indices point at, are torch's to compare.
    scase("topk_ties_values", lambda x: (lambda v, i: (v, x.gather(-1, i)))(*x.topk(_k(x, 5))),
          variants=TIES, dtypes=NO_BOOL),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sorting(case):
    run_case(case)


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
def test_topk_ties_lower_index_first(largest):
    """luminal's rule among equal values is a stable sort's: the lower index first."""
    x = torch.tensor([[1, 0, 1, 1, 0, 1, 2, 1], [3, 3, 3, 3, 3, 3, 3, 3]], dtype=i64)
    backend = CountingBackend()
    compiled = torch.compile(lambda t: torch.topk(t, 5, largest=largest), backend=backend, fullgraph=True)
    values, indices = compiled(x)
    expected = torch.sort(x, descending=largest, stable=True)
    assert torch.equal(values, torch.topk(x, 5, largest=largest).values)
    assert torch.equal(values, expected.values[:, :5])
    assert torch.equal(indices, expected.indices[:, :5])
    assert len(backend.compiled) == 1


def test_router_topk_one_compile_for_every_routing():
    """A router's softmax then topk, as Qwen3-MoE and Mixtral route: new logits never recompile."""
    backend = CountingBackend()

    def route(logits):
        probs = torch.softmax(logits, dim=-1, dtype=f32)
        return torch.topk(probs, 2, dim=-1)

    compiled = torch.compile(route, backend=backend, fullgraph=True)
    for seed in range(4):
        logits = torch.randn(5, 8, generator=torch.Generator().manual_seed(seed))
        values, indices = compiled(logits)
        expected = route(logits)
        torch.testing.assert_close(values, expected.values, rtol=1e-6, atol=1e-6)
        assert torch.equal(indices, expected.indices)
    assert len(backend.compiled) == 1
