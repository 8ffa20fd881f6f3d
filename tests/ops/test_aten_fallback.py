"""The ATen fallback: an op luminal does not translate runs through torch's own kernel (the c10
dispatcher) on luminal's buffers, between fused kernels, and says so: it is listed in
`stats['fallback_ops']` and logged once per compile. Results must equal eager's exactly (the
same kernel runs), on both runtimes, for non-contiguous inputs, symbolic sizes, several results
and random ops."""

from __future__ import annotations

import logging

import pytest
import torch

import luminal
from conftest import CountingBackend, assert_close

RUNTIMES = ("cpu", "reference")


def compile_with(fn, runtime, **kwargs):
    backend = CountingBackend({"runtime": runtime})
    return torch.compile(fn, backend=backend, fullgraph=True, **kwargs), backend


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_fallback_op_between_native_ops_matches_eager(runtime):
    def model(x, y):
        # The fallback's input is a transposed view and its result feeds a native op.
        return torch.cdist(x.transpose(0, 1) * 2, y).softmax(-1) + 1

    compiled, backend = compile_with(model, runtime)
    x, y = torch.randn(3, 5), torch.randn(4, 3)
    assert_close(compiled(x, y), model(x, y))
    stats = backend.compiled[0].stats
    assert stats["fallback_ops"] == ["aten::_cdist_forward.default"]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fallback_with_two_results_in_every_float_dtype(runtime, dtype):
    def model(x):
        # _embedding_bag returns four tensors: the fallback binds each result it is asked for.
        weight = x[:, :4]
        indices = torch.tensor([0, 2, 1, 3, 3])
        offsets = torch.tensor([0, 2])
        return torch.nn.functional.embedding_bag(indices, weight, offsets, mode="max") * 2

    compiled, backend = compile_with(model, runtime)
    x = torch.randn(4, 6, dtype=dtype)
    torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    # Inference graphs decompose embedding_bag to its forward-only form.
    assert backend.compiled[0].stats["fallback_ops"] == ["aten::_embedding_bag_forward_only.default"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_fallback_integer_results_are_exact(runtime):
    def model(x):
        values, indices = torch.nn.functional.adaptive_max_pool2d(x, 3, return_indices=True)
        return values, indices + 1

    compiled, backend = compile_with(model, runtime)
    x = torch.randn(2, 3, 7, 5)
    actual, expected = compiled(x), model(x)
    assert torch.equal(actual[0], expected[0]) and torch.equal(actual[1], expected[1])
    assert backend.compiled[0].stats["fallback_ops"]


def test_fallback_with_symbolic_size_argument():
    def model(x):
        # rand's size is a SymInt under dynamic=True: bound per call from x's shape.
        return torch.zeros(x.shape[0], 3).uniform_() * 0 + x.sum(-1, keepdim=True)

    compiled, backend = compile_with(model, "cpu", dynamic=True)
    for rows in (2, 5, 9):
        x = torch.randn(rows, 4)
        assert_close(compiled(x), model(x))
    assert len(backend.compiled) == 1


def test_random_op_follows_torch_generator():
    def model(x):
        return torch.rand(x.shape[0], 3) + x

    compiled, _ = compile_with(model, "cpu")
    x = torch.zeros(4, 3)
    compiled(x)  # compiles
    torch.manual_seed(7)
    expected = model(x)
    torch.manual_seed(7)
    assert torch.equal(compiled(x), expected)


def test_fallback_is_logged_once_per_compile(caplog):
    def model(x, y):
        return torch.cdist(x, y) + torch.cdist(y, x).t()

    compiled, _ = compile_with(model, "cpu")
    with caplog.at_level(logging.WARNING, logger="luminal"):
        compiled(torch.randn(3, 2), torch.randn(3, 2))
        compiled(torch.randn(3, 2), torch.randn(3, 2))
    records = [r for r in caplog.records if "ATen fallback" in r.getMessage()]
    assert len(records) == 1
    assert "aten::_cdist_forward.default" in records[0].getMessage()


def test_native_ops_report_no_fallback():
    compiled, backend = compile_with(lambda x: (x * 2).relu(), "cpu")
    compiled(torch.randn(3))
    assert backend.compiled[0].stats["fallback_ops"] == []


def test_data_dependent_result_shape_is_unsupported_not_wrong():
    # unique has no translation, and its result's size depends on the data (nonzero, the other
    # such op, is translated natively: tests/ops/test_data_dependent.py).
    class Unique(torch.nn.Module):
        def forward(self, x):
            return torch.unique(x)

    program = torch.export.export(Unique(), (torch.tensor([1, 0, 2, 1]),))
    with pytest.raises(luminal.UnsupportedError, match="depends on the data"):
        luminal.compile(program)
