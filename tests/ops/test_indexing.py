"""Reading ops that index by tensors: gather, index_select, embedding and index.Tensor (advanced
indexing). index_put is tested with the KV cache (tests/models)."""

from __future__ import annotations

import pytest
import torch

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
