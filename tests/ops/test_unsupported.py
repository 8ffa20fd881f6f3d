"""An op with no translation raises luminal.UnsupportedError naming the overload, the node and the
model's source line: never a crash, never a silent fallback."""

from __future__ import annotations

import pytest
import torch

import luminal
from conftest import CountingBackend


def test_untranslated_op_names_overload_node_and_source_line():
    weight = torch.randn(2, 3, 3)

    def model(x):
        y = x * 2
        return torch.nn.functional.conv1d(y, weight)  # the line the error must point at

    compiled = torch.compile(model, backend=CountingBackend(), fullgraph=True)
    with pytest.raises(luminal.UnsupportedError) as info:
        compiled(torch.randn(1, 3, 8))
    message = str(info.value)
    assert "aten::convolution.default has no translation" in message
    assert "node 'convolution" in message
    assert "test_unsupported.py" in message and "conv1d(y, weight)" in message
