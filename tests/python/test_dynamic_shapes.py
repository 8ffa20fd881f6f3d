"""Symbolic dims: one compile serves every value of a dim dynamo made dynamic."""

from __future__ import annotations

import pytest
import torch

import luminal
from conftest import CountingBackend, assert_close


class ScaledMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        # x.shape[0] reaches the graph as a SymInt input under dynamic=True.
        return torch.relu(self.fc(x)).reshape(-1) * x.shape[0]


def test_dynamic_true_compiles_once_for_all_batch_sizes():
    torch.manual_seed(0)
    model = ScaledMLP().eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=True, fullgraph=True)
    for batch in (2, 5, 7, 3):
        x = torch.randn(batch, 8)
        assert_close(compiled(x), model(x).detach())
    assert len(backend.compiled) == 1


def test_automatic_dynamic_recompiles_once_then_serves_new_sizes():
    torch.manual_seed(0)
    model = ScaledMLP().eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    for batch in (2, 5, 9, 4):
        x = torch.randn(batch, 8)
        assert_close(compiled(x), model(x).detach())
    # The first graph is static; the second, after a size change, has a symbolic batch dim.
    assert len(backend.compiled) == 2


def test_a_sliced_input_with_a_dynamic_dim_serves_every_size_and_stride():
    """A column slice of a wider tensor under automatic dynamic: dynamo lifts the symbols of its
    row stride and storage offset as graph inputs nothing reads, and torch.export failed on such
    an input (its own guards: 'NoneType' object has no attribute 'size'). Luminal drops those
    symbols and exports the input as a contiguous one; each call's strides come from the tensor."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(300, 70)
    backend = CountingBackend()
    compiled = torch.compile(linear, backend=backend)
    with torch.no_grad():
        for rows, width in ((7, 310), (13, 310), (21, 310), (9, 400)):
            x = torch.randn(rows, width)[:, 5:305]
            assert_close(compiled(x), linear(x))
    assert len(backend.compiled) == 2


def test_shape_the_graph_does_not_accept_is_a_user_error():
    model = ScaledMLP().eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        compiled(torch.randn(3, 8))
    program = backend.compiled[0]._bound.program
    with pytest.raises(luminal.UserError, match=r"input '\w+' has shape \[3, 9\] but the compiled graph expects \[s\d+, 8\]"):
        program.run([torch.randn(3, 9)])


@pytest.mark.parametrize("copy_graph", ["own_copy", "deepcopy"])
def test_export_graph_takes_either_copy_of_a_dynamic_graph(copy_graph):
    """A deepcopied GraphModule's forward takes *args, and keeps it through export_graph's
    recompile: the dynamic-shape specs are then grouped as one tuple for that *args. The
    own_copy() the backend passes has one named parameter per placeholder instead."""
    import copy

    from luminal.export import export_graph, own_copy

    calls = []

    def capture(gm, example_inputs):
        def run(*args):
            calls.append((gm, list(args)))
            return gm(*args)

        return run

    torch.compile(lambda t: (t * 2).sum(-1), backend=capture, dynamic=True)(torch.randn(3, 5))
    gm, args = calls[0]
    graph = own_copy(gm) if copy_graph == "own_copy" else copy.deepcopy(gm)
    assert export_graph(graph, args).archive
