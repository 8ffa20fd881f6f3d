"""With options={'fallback': 'error'}, an op with no native translation raises
luminal.UnsupportedError naming the overload, the node and the model's source line: never a
crash, never a silent fallback."""

from __future__ import annotations

import pytest
import torch

import luminal
from conftest import CountingBackend


def test_untranslated_op_names_overload_node_and_source_line():
    def model(x, y):
        z = x * 2
        return torch.cdist(z, y)  # the line the error must point at

    compiled = torch.compile(model, backend=CountingBackend({"fallback": "error"}), fullgraph=True)
    with pytest.raises(luminal.UnsupportedError) as info:
        compiled(torch.randn(4, 3), torch.randn(5, 3))
    message = str(info.value)
    assert "aten::_cdist_forward.default has no native translation" in message
    assert "node '_cdist_forward" in message
    assert "test_unsupported.py" in message and "torch.cdist(z, y)" in message
    assert "fallback='aten'" in message


def test_unknown_fallback_policy_is_a_user_error():
    program = torch.export.export(torch.nn.ReLU(), (torch.ones(2),))
    with pytest.raises(luminal.UserError, match="'fallback' must be one of \\('aten', 'error'\\), got 'python'"):
        luminal.compile(program, options={"fallback": "python"})


def test_an_untranslated_higher_order_op_is_unsupported_not_an_internal_error():
    # A higher-order op has no schema, so the ATen fallback cannot call it either.
    def branch(x):
        return torch.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))

    with pytest.raises(luminal.UnsupportedError, match="higher_order::cond is a higher-order op luminal does not"):
        torch.compile(branch, backend="luminal")(torch.ones(3))
