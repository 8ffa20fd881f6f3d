"""Ops whose results are numbers or sizes read from tensor data, against eager: Tensor.item()
(aten::_local_scalar_dense) used as a number, as a size and returned; nonzero and what is built
on it (argwhere, where(cond), boolean mask indexing, masked_select, masked_scatter); and the
runtime assertions export adds on such sizes. Dynamo captures them only when told to (capture_scalar_outputs,
capture_dynamic_output_shape_ops); one compile then serves every value dynamo does not
specialise."""

from __future__ import annotations

import pytest
import torch

import luminal
from conftest import CountingBackend
from op_harness import ALL, FLOATS, INTS, Case, mismatch, run_case


@pytest.fixture(autouse=True)
def capture_data_dependent_ops():
    with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        yield


def compiled(fn):
    backend = CountingBackend({"fallback": "error"})
    return torch.compile(fn, backend=backend, fullgraph=True, dynamic=False), backend


def dynamo_graph_count(fn, calls) -> int:
    """How many graphs dynamo makes of fn over `calls` (it specialises some values: 0 and 1)."""
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.reset()
    counted = torch.compile(fn, backend=count, fullgraph=True, dynamic=False)
    for args in calls:
        counted(*args)
    torch._dynamo.reset()
    return len(graphs)


def check_each(fn, calls):
    """fn compiled by luminal, against eager on every argument tuple in `calls`; luminal compiles
    each graph dynamo hands it once, its sizes read from the data of every call."""
    expected_graphs = dynamo_graph_count(fn, calls)
    compiled_fn, backend = compiled(fn)
    for args in calls:
        problem = mismatch(compiled_fn(*args), fn(*args))
        shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args]
        assert problem is None, f"{shapes}: {problem}"
    assert len(backend.compiled) == expected_graphs


ITEM_VARIANTS = {
    "2d": (lambda m: m((3, 4)), lambda m: m(())),
    "transposed": (lambda m: m((4, 3)).t(), lambda m: m((1,))),
}


@pytest.mark.parametrize(
    "case",
    [
        Case("item_as_number", lambda x, t: (x * t.item(), x + t.item()), FLOATS + INTS, ITEM_VARIANTS,
             short=("2d",)),
        Case("item_as_fill_value", lambda x, t: (torch.full((2,), t.item()), x), FLOATS + INTS,
             ITEM_VARIANTS),
    ],
    ids=str,
)
def test_item_as_a_number(case):
    run_case(case)


def test_item_as_a_size():
    def fn(x, n):
        k = n.item()
        return torch.full((k,), 1.5), torch.arange(k) * 2, x[:k], torch.zeros(k, 2) + x.sum()

    x = torch.arange(6.0)
    # 9 > len(x): the slice is clamped to x, through a size torch names afresh (u1 = min(u0, 6)).
    check_each(fn, [(x, torch.tensor(n)) for n in (3, 0, 1, 9, 4)])


def test_item_of_narrow_integers_and_a_one_element_tensor():
    def fn(x, n):
        return x[: n.item()], torch.ones(n.item(), dtype=torch.int32)

    x = torch.arange(10)
    check_each(fn, [(x, torch.tensor([[4]], dtype=torch.int32)), (x, torch.tensor([[7]], dtype=torch.int32))])
    check_each(fn, [(x, torch.tensor(2, dtype=torch.uint8))])


def test_item_returned():
    def fn(x, n, f):
        return x * 2, n.sum().item(), f.item(), n.item() + 1

    x = torch.ones(3)
    check_each(fn, [(x, torch.tensor(5), torch.tensor(0.25)), (x, torch.tensor(-7), torch.tensor(3.5))])


def test_negative_size_from_data_is_a_user_error():
    # Through dynamo a new value recompiles and dynamo's own fake run rejects it; an exported
    # program runs any value, and luminal's runtime checks it.
    class Zeros(torch.nn.Module):
        def forward(self, n):
            return torch.zeros(n.item())

    program = luminal.compile(torch.export.export(Zeros(), (torch.tensor(2),)))
    assert torch.equal(program(torch.tensor(3))[0], torch.zeros(3))
    with pytest.raises(luminal.UserError, match="u0 >= 0|must not be negative"):
        program(torch.tensor(-1))


def test_failed_check_on_data_is_a_user_error_with_its_expression():
    class Checked(torch.nn.Module):
        def forward(self, x, n):
            k = n.item()
            torch._check(k <= 4)
            return x[:k] + 1

    x = torch.arange(8.0)
    program = luminal.compile(torch.export.export(Checked(), (x, torch.tensor(2))))
    assert torch.equal(program(x, torch.tensor(4))[0], x[:4] + 1)
    with pytest.raises(luminal.UserError, match="u0 <= 4"):
        program(x, torch.tensor(5))


def test_every_kind_of_check_on_data():
    """torch._check_is_size and torch._check with >, <, != and == on a value read from data: each
    becomes a runtime assertion (export writes sym_not, comparisons and _assert_scalar)."""

    class Checked(torch.nn.Module):
        def forward(self, x, n):
            k = n.item()
            torch._check_is_size(k, max=7)
            torch._check(k > 0)
            torch._check(k != 5)
            torch._check(k < 9)
            return x[:k] * 2

    x = torch.arange(8.0)
    program = luminal.compile(torch.export.export(Checked(), (x, torch.tensor(2))))
    for k in (1, 3, 7):
        assert torch.equal(program(x, torch.tensor(k))[0], x[:k] * 2)
    for k, failed in ((0, "u0 >= 1"), (5, "Ne\\(u0, 5\\)"), (8, "u0 <= 7")):
        with pytest.raises(luminal.UserError, match=failed):
            program(x, torch.tensor(k))


def test_aot_program_with_item():
    class Model(torch.nn.Module):
        def forward(self, x, n):
            return x * n.item(), torch.arange(n.item())

    args = (torch.randn(4), torch.tensor(3))
    program = luminal.compile(torch.export.export(Model(), args))
    for n in (3, 0, 6):
        call = (args[0], torch.tensor(n))
        assert mismatch(program(*call), Model()(*call)) is None


# Each variant's mask comes from a second random tensor of the same dtype (> 0 for numbers).
MASK_VARIANTS = {
    "2d": (lambda m: m((3, 4)), lambda m: m((3, 4))),
    "transposed": (lambda m: m((4, 3)).t(), lambda m: m((3, 4))),
    "3d": (lambda m: m((2, 3, 4)), lambda m: m((2, 3, 4))),
    "empty": (lambda m: m((0, 4)), lambda m: m((0, 4))),
}


def selected(m):
    return m if m.dtype == torch.bool else m > 0


def source_for(x):
    """More values than any mask of x selects (masked_scatter consumes them in order)."""
    return (torch.arange(x.numel() + 2) % 7).to(x.dtype)


@pytest.mark.parametrize(
    "case",
    [
        Case("nonzero", torch.nonzero, ALL, short=("transposed", "0d")),
        Case("nonzero_as_tuple", lambda x: torch.nonzero(x, as_tuple=True), ALL, short=("sliced",)),
        Case("argwhere", torch.argwhere, ALL, short=("expanded",)),
        Case("where_condition", lambda x: torch.where(selected(x)), ALL, short=("2d",)),
        Case("mask_index", lambda x, m: x[selected(m)], ALL, MASK_VARIANTS, short=("transposed",)),
        Case("mask_index_leading_dims", lambda x, m: (x[selected(m)[..., 0]], x[:, selected(m)[0]]), ALL,
             {k: v for k, v in MASK_VARIANTS.items() if k != "empty"}, short=("2d",)),
        Case("masked_select", lambda x, m: torch.masked_select(x, selected(m)), ALL, MASK_VARIANTS,
             short=("2d",)),
        Case("masked_select_broadcast", lambda x, m: torch.masked_select(x, selected(m)[0]), ALL,
             {k: v for k, v in MASK_VARIANTS.items() if k != "empty"}, short=("3d",)),
        Case("masked_scatter", lambda x, m: x.masked_scatter(selected(m), source_for(x)), ALL, MASK_VARIANTS,
             short=("transposed",)),
    ],
    ids=str,
)
def test_nonzero_and_masks(case):
    run_case(case)


def test_one_compile_serves_every_mask():
    def fn(x, m):
        return torch.nonzero(m), x[m], x.masked_scatter(m, -torch.arange(12.0).reshape(3, 4))

    x = torch.arange(12.0).reshape(3, 4)
    masks = [torch.rand(3, 4, generator=torch.Generator().manual_seed(i)) > 0.5 for i in range(3)]
    masks += [torch.zeros(3, 4, dtype=torch.bool), torch.ones(3, 4, dtype=torch.bool)]
    check_each(fn, [(x, m) for m in masks])


def test_nonzero_of_a_large_mask_is_linear():
    """The positions come from one scan: a 1M-element mask compiles and runs in about the time of
    a few passes over it (the old masked-triangle cumsum was quadratic)."""
    x = torch.rand(1024, 1024, generator=torch.Generator().manual_seed(0))
    check_each(lambda x: torch.nonzero(x > 0.5), [(x,)])


def test_masked_scatter_with_too_short_a_source_is_a_user_error():
    class Scatter(torch.nn.Module):
        def forward(self, x, m, source):
            return x.masked_scatter(m, source)

    x, source = torch.zeros(4), torch.ones(2)
    first = torch.tensor([True, False, True, False])
    program = luminal.compile(torch.export.export(Scatter(), (x, first, source)))
    two = torch.tensor([False, True, True, False])
    assert torch.equal(program(x, two, source)[0], torch.tensor([0.0, 1, 1, 0]))
    with pytest.raises(luminal.UserError, match="the mask selects more elements than source has"):
        program(x, torch.tensor([True, True, True, False]), source)
