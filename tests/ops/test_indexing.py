"""Ops that index by tensors: gather, index_select, embedding, index.Tensor (advanced indexing)
and its write form index_put in all its forms (integer indices of any rank with scalar or
broadcast values, None entries, several index tensors broadcast together, accumulate, and
boolean masks: a blend where the values broadcast, the masked positions' own values otherwise).
The KV-cache write is also tested through the models (tests/models)."""

from __future__ import annotations

import pytest
import torch

from conftest import CountingBackend
from op_harness import ALL, FLOATS, Case, run_case

IDX = torch.tensor([[2, 0, 1], [1, 1, 0]])
V = {"2d": (lambda m: m((3, 4)),), "transposed": (lambda m: m((4, 3)).t(),)}


def icase(name, fn, **kw):
    return Case(name, fn, dtypes=ALL, variants=V, short=("transposed",), **kw)


CASES = [
    icase("gather", lambda x: torch.gather(x, 0, IDX)),
    icase("gather_negative_dim", lambda x: torch.gather(x, -1, IDX[:, :2].t())),
    icase("index_select", lambda x: torch.index_select(x, 1, torch.tensor([3, 0, 3]))),
    icase("index_select_negative", lambda x: x.index_select(-2, torch.tensor([2, 0]))),
    icase("index_tensor", lambda x: x[torch.tensor([2, -1, 0])]),
    icase("index_tensor_2d", lambda x: x[:, torch.tensor([[0, 1], [3, 2]])]),
    icase("index_tensor_pair", lambda x: x[torch.tensor([0, 2]), torch.tensor([1, 3])]),
    Case("embedding", lambda w: torch.nn.functional.embedding(torch.tensor([[0, 2], [1, 1]]), w), dtypes=ALL, variants=V,
         short=("transposed",)),
    # Regressions (OpInfo): an empty index of another rank gathers nothing; a 0-d input gathers
    # as a 1-element vector.
    icase("gather_empty_index", lambda x: torch.gather(x[0], 0, torch.zeros(2, 0, dtype=torch.int64))),
    icase("gather_0d_input", lambda x: torch.gather(x[0, 0], 0, torch.tensor([0, 0]))),
    # max_norm renormalises the referenced rows of the weight (embedding_renorm), also in place
    # in eager: the weight is cloned so that both runs see the same input.
    Case("embedding_max_norm", lambda w: torch.nn.functional.embedding(torch.tensor([[0, 2], [2, 1]]), w.clone(),
                                                                        max_norm=1.0), dtypes=FLOATS, variants=V,
         short=("transposed",)),
    Case("embedding_max_norm_p1", lambda w: torch.nn.functional.embedding(torch.tensor([1, 1]), w.clone(), max_norm=2.0,
                                                                           norm_type=1.0), dtypes=FLOATS, variants=V,
         short=("transposed",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_indexing(case):
    run_case(case)


def put(x, indices, values, accumulate=False):
    return torch.index_put(x, indices, values.to(x.dtype), accumulate=accumulate)


def positive(x):
    return x > 0 if x.dtype != torch.bool else x


def assign_columns(x, columns, values):
    """y[:, columns] = values: index_put with indices [None, columns]."""
    y = x.clone()
    y[:, columns] = values.to(x.dtype)
    return y


ROWS = torch.tensor([[0, 2], [1, 1]])
PUT_CASES = [
    # A 0-d source broadcast to every indexed position (upstream's scatter panicked on it).
    icase("index_put_rank2_index_scalar_value", lambda x: put(x, (ROWS,), torch.tensor(5))),
    icase("index_put_broadcast_row", lambda x: put(x, (torch.tensor([2, 0]),), torch.arange(4))),
    icase("index_put_none_then_index",
          lambda x: assign_columns(x, torch.tensor([3, 1]), torch.tensor([[1], [2], [3]]))),
    icase("index_put_two_indices_broadcast",
          lambda x: put(x, (torch.tensor([[0], [2]]), torch.tensor([1, 3])), torch.tensor([[7, 8], [9, 6]]))),
    icase("index_put_accumulate_duplicates",
          lambda x: put(x, (torch.tensor([0, 0, 2, 0]),), torch.ones(4), True)),
    # Boolean masks: all-false must change nothing (upstream wrote row 0), all-true everything.
    icase("index_put_mask",
          lambda x: tuple(put(x, (mask,), torch.tensor(3)) for mask in (positive(x), x != x, x == x))),
    icase("index_put_mask_rows", lambda x: put(x, (positive(x)[:, 0],), torch.arange(x.shape[1]))),
    icase("index_put_mask_own_values", lambda x: put(x, (positive(x),), x[positive(x)] * 2)),
    icase("index_put_mask_accumulate", lambda x: put(x, (positive(x),), torch.tensor(2), True)),
]


@pytest.fixture
def capture_data_dependent_ops():
    # x[mask] reads a data-dependent count of values; dynamo captures it only when told to.
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        yield


@pytest.mark.parametrize("case", PUT_CASES, ids=str)
def test_index_put(case, capture_data_dependent_ops):
    run_case(case)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.int8, torch.bool],
                         ids=str)
def test_cache_write_stays_inside_the_cache(dtype):
    """Regression (research/upstream-luminal.md §5, lesson 11): upstream's scatter copied bf16 in
    4-byte vectors and wrote twice past the end of the cache. A StaticCache-style index_copy_ into
    a cache that is the head of a larger storage, odd sizes: the rows land, the rest is untouched."""

    def step(cache, positions, rows):
        cache.index_copy_(1, positions, rows)
        return cache * 1

    sentinel = torch.tensor(1, dtype=dtype)
    storage = sentinel.repeat(2 * 7 * 5 + 9)
    cache = storage[: 2 * 7 * 5].view(2, 7, 5)
    cache.zero_()
    expected = cache.clone()
    positions, rows = torch.tensor([3, 6]), (torch.arange(20) % 3).to(dtype).view(2, 2, 5)
    compiled = torch.compile(step, backend=CountingBackend({"fallback": "error"}), fullgraph=True)
    out = compiled(cache, positions, rows)
    step(expected, positions, rows)
    assert torch.equal(cache, expected) and torch.equal(out, expected)
    assert torch.equal(storage[2 * 7 * 5 :], sentinel.repeat(9))
