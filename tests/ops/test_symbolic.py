"""Symbolic ints that are no tensor's size: Python max()/min() on them (torch.sym_max/sym_min)
and a SymInt returned by the graph, as Gemma-3's StaticSlidingWindowLayer produces with its
Python-int length (`kv_offset = max(length - window + 1, 0)`, then `length += 1`)."""

from __future__ import annotations

import torch

from conftest import CountingBackend, assert_close


class Window:
    """A Python-int length advanced on every call, like the sliding-window cache layer's."""

    def __init__(self) -> None:
        # Not 0 or 1: export specialises a size of 0 or 1, and luminal binds such an int from the
        # size of a carrier tensor (see luminal.export.size_carrier).
        self.length = 4


def _advance(window: Window, x: torch.Tensor) -> torch.Tensor:
    offset = max(window.length - 6, 0)
    capped = min(window.length, 7)
    window.length += 1
    return x * offset + capped


def test_sym_max_min_and_symint_output():
    backend = CountingBackend()
    ours, theirs = Window(), Window()
    compiled = torch.compile(lambda x: _advance(ours, x), backend=backend, fullgraph=True)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    for _ in range(8):  # both sides of the max and of the min
        assert_close(compiled(x), _advance(theirs, x))
        # The `+= 1` is a SymInt graph output: dynamo writes it back to the attribute.
        assert ours.length == theirs.length
    # The first call specialises the int; when it changes dynamo makes it a SymInt, once.
    assert len(backend.compiled) == 2
