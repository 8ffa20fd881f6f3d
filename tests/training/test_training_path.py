"""The backend's training path: when autograd must see through the graph, AOTAutograd's forward
and backward both compile through luminal; otherwise nothing changes."""

from __future__ import annotations

import copy
import gc
import logging
import os

import luminal
import pytest
import torch
import torch.nn.functional as F
from conftest import CountingBackend
from grad_harness import recording_graphs
from training_models import FAMILIES, MLP, call


def _inner(error: BaseException) -> BaseException:
    """dynamo wraps backend errors in BackendCompilerFailed; the cause is ours."""
    return getattr(error, "inner_exception", error)


def test_compiled_module_inside_a_larger_loss_gets_its_gradients():
    """The regression of issue 20: the compiled module's outputs came back detached, so only the
    parameters outside it got gradients, with no error."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 3))
    reference = copy.deepcopy(model)
    other = torch.nn.Parameter(torch.randn(3))
    x = torch.randn(5, 12)
    (torch.compile(model, backend="luminal")(x).sum() + other.sum()).backward()
    (reference(x).sum() + other.sum()).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad is not None, f"{name} got no gradient: the compiled output was detached"
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)


def test_outputs_carry_grad_fn_and_backward_runs_luminals_backward():
    torch.manual_seed(0)
    model = MLP()
    backend = CountingBackend()
    patch, recorded = recording_graphs()
    with patch:
        out = torch.compile(model, backend=backend)(torch.randn(4, 12))
    assert out.requires_grad and out.grad_fn is not None
    (compiled,) = backend.compiled
    assert isinstance(compiled, luminal.TrainingModel)
    assert set(recorded.targets) == {"forward", "backward"}  # both compiled at the first call
    runs_before = compiled.backward.stats["run_count"]
    out.sum().backward()
    assert compiled.backward.stats["run_count"] == runs_before + 1
    assert all(p.grad is not None for p in model.parameters())


def test_input_gradients_without_parameters():
    def fn(x, w):
        return F.gelu(x @ w).softmax(-1)

    x, w = torch.randn(4, 6, requires_grad=True), torch.randn(6, 5, requires_grad=True)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    grad = torch.randn(4, 5)
    torch.autograd.backward(torch.compile(fn, backend="luminal")(x, w), grad)
    torch.autograd.backward(fn(x2, w2), grad)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad, w2.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode], ids=["no_grad", "inference_mode"])
def test_no_grad_and_inference_mode_keep_the_inference_path(context):
    model = MLP()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with context():
        for _ in range(3):
            out = compiled(torch.randn(4, 12))
            assert not out.requires_grad
    assert len(backend.compiled) == 1
    assert isinstance(backend.compiled[0], luminal.CompiledModel)


def test_grad_mode_switches_between_the_two_paths():
    """dynamo guards on grad mode: a training call after an inference one compiles once more,
    and each mode then keeps its own compiled graph."""
    model = MLP()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(4, 12)
    for _ in range(2):
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x))
        compiled(x).sum().backward()
    assert [type(c).__name__ for c in backend.compiled] == ["CompiledModel", "TrainingModel"]


def test_two_forwards_then_one_backward():
    """Each call's saved activations are its own: the second forward never overwrites the first's
    (gradient accumulation over micro-batches)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)
    )
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="luminal")
    x1, x2 = torch.randn(8, 16), torch.randn(8, 16)
    ((compiled(x1) ** 2).sum() + (compiled(x2) * 3).sum()).backward()
    ((reference(x1) ** 2).sum() + (reference(x2) * 3).sum()).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5)


def test_batch_norm_statistics_update_the_callers_buffers_in_place():
    torch.manual_seed(0)
    model = FAMILIES["cnn"].build()
    reference = copy.deepcopy(model)
    pointers = [b.data_ptr() for b in model.buffers()]
    batch = FAMILIES["cnn"].batch(torch.Generator().manual_seed(0))
    compiled = torch.compile(model, backend="luminal")
    for _ in range(2):
        FAMILIES["cnn"].loss(call(compiled, batch), batch).backward()
        FAMILIES["cnn"].loss(call(reference, batch), batch).backward()
    assert [b.data_ptr() for b in model.buffers()] == pointers
    for b, c in zip(model.buffers(), reference.buffers()):
        torch.testing.assert_close(b, c, rtol=1e-5, atol=1e-6)


def test_backward_op_without_native_translation_is_an_error_at_compile_with_fallback_error():
    """prod's backward needs cumprod, which has no native translation yet."""
    compiled = torch.compile(lambda x: x.prod(1), backend="luminal", options={"fallback": "error"})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(3, 4, requires_grad=True))  # the first call compiles both graphs
    error = _inner(info.value)
    assert isinstance(error, luminal.UnsupportedError)
    assert "in the backward graph" in str(error) and "aten::cumprod.default" in str(error)
    assert "node 'cumprod'" in str(error)


def test_backward_op_without_native_translation_runs_through_aten_and_is_listed(caplog):
    backend = CountingBackend()
    x = torch.randn(3, 4, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    with caplog.at_level(logging.WARNING, logger="luminal"):
        torch.compile(lambda t: t.prod(1), backend=backend)(x).sum().backward()
    x2.prod(1).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    assert backend.compiled[0].stats["fallback_ops"] == ["aten::cumprod.default"]
    assert "backward graph through the ATen fallback" in caplog.text


def test_dynamic_shapes_compile_forward_and_backward_once():
    """Batch and sequence length vary; sizes stay above 1, which dynamo specialises for every
    backend (inductor recompiles for a batch of 1 too)."""
    torch.manual_seed(0)
    model = FAMILIES["llama"].build()
    reference = copy.deepcopy(model)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    compiles = []
    real = luminal.training.compile_part

    def counting(graph, part, *args, **kwargs):
        compiles.append(part)
        return real(graph, part, *args, **kwargs)

    import unittest.mock

    with unittest.mock.patch.object(luminal.training, "compile_part", counting):
        for batch, length in [(2, 12), (3, 7), (4, 9)]:
            ids = torch.randint(0, 256, (batch, length), generator=torch.Generator().manual_seed(length))
            model.zero_grad()
            reference.zero_grad()
            compiled(input_ids=ids).logits.logsumexp(-1).mean().backward()
            reference(input_ids=ids).logits.logsumexp(-1).mean().backward()
            for p, q in zip(model.parameters(), reference.parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    assert len(backend.compiled) == 1
    assert sorted(compiles) == ["backward", "forward"]


def test_mark_dynamic_batch_compiles_once():
    model = MLP()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    for batch in (4, 7, 12):
        x = torch.randn(batch, 12)
        torch._dynamo.mark_dynamic(x, 0)
        compiled(x).sum().backward()
    assert len(backend.compiled) == 1


def test_a_sliced_input_with_a_dynamic_dim_gets_eagers_gradients():
    """The forward graph AOTAutograd derives returns the symbols of a sliced input's row stride
    and storage offset for the backward: Python outputs read from the call's arguments, not
    symbols the core must bind (they were refused as 'no tensor input's size')."""
    torch.manual_seed(0)
    model = torch.nn.Linear(300, 70)
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend=CountingBackend())
    for rows, width in ((7, 310), (13, 310), (9, 400)):
        x = torch.randn(rows, width)[:, 5:305]
        model.zero_grad()
        reference.zero_grad()
        compiled(x).square().sum().backward()
        reference(x).square().sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")
def test_a_thousand_training_steps_keep_memory_flat():
    """Saved activations are freed after each backward: nothing grows with the step count."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    compiled = torch.compile(model, backend="luminal")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(32, 64)

    def step():
        compiled(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()

    for _ in range(50):  # compile, warm the allocator
        step()
    gc.collect()
    before = _rss_bytes()
    for _ in range(1000):
        step()
    gc.collect()
    growth = _rss_bytes() - before
    assert growth < 16 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 1,000 steps"
