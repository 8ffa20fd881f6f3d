"""Training whole models through luminal: every parameter's gradient against eager's (f32
tight; bf16 weights and bf16 autocast against an f32 reference, no further from it than eager
is), and 20 AdamW steps giving eager's loss curve."""

from __future__ import annotations

import copy

import luminal
import pytest
import torch
from conftest import CountingBackend
from training_models import FAMILIES, call

BF16_MODES = ("bf16_weights", "bf16_autocast")


def _batch(name: str, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    batch = FAMILIES[name].batch(torch.Generator().manual_seed(0))
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in batch.items()}


def _loss(
    name: str, model: torch.nn.Module, batch: dict[str, torch.Tensor], autocast: bool = False
) -> torch.Tensor:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        return FAMILIES[name].loss(call(model, batch), batch)


def _gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


def _compiled(model: torch.nn.Module) -> tuple[torch.nn.Module, CountingBackend]:
    backend = CountingBackend()
    return torch.compile(model, backend=backend), backend


def _assert_trained_by_luminal(backend: CountingBackend) -> None:
    assert backend.compiled, "luminal compiled nothing"
    for compiled in backend.compiled:
        assert isinstance(compiled, luminal.TrainingModel)
        assert compiled.backward is not None, "no backward graph was compiled by luminal"
        assert compiled.stats["fallback_ops"] == [], compiled.stats["fallback_ops"]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_f32_gradients_match_eager(name):
    torch.manual_seed(0)
    model = FAMILIES[name].build()
    reference = copy.deepcopy(model)
    batch = _batch(name)
    compiled, backend = _compiled(model)
    loss = _loss(name, compiled, batch)
    loss.backward()
    expected_loss = _loss(name, reference, batch)
    expected_loss.backward()
    _assert_trained_by_luminal(backend)
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-6)
    expected = _gradients(reference)
    scale = max(g.abs().max().item() for g in expected.values() if g is not None)
    for name_, grad in _gradients(model).items():
        assert grad is not None, f"{name_} has no gradient"
        torch.testing.assert_close(
            grad, expected[name_], rtol=1e-4, atol=1e-5 * scale, msg=lambda m, name_=name_: f"{name_}: {m}"
        )


@pytest.mark.parametrize("mode", BF16_MODES)
@pytest.mark.parametrize("name", list(FAMILIES))
def test_bf16_gradients_are_as_close_to_f64_as_eager(name, mode):
    """bf16 gradients of eager itself are 1-20% off the exact ones (a bf16 CNN's most), so a
    tolerance around eager's values would be loose or flaky. The reference is the same model
    and batch in f32 (from the bf16-rounded weights; f32's own error is 1e-6 of bf16's, and
    grouped_mm has no f64 kernel); luminal's gradients must be no further from it than eager's,
    within a margin."""
    torch.manual_seed(0)
    model = FAMILIES[name].build()
    autocast = mode == "bf16_autocast"
    if not autocast:
        model = model.to(torch.bfloat16)
    eager, exact = copy.deepcopy(model), copy.deepcopy(model).float()
    batch = _batch(name, torch.float32 if autocast else torch.bfloat16)
    compiled, backend = _compiled(model)
    _loss(name, compiled, batch, autocast).backward()
    _loss(name, eager, batch, autocast).backward()
    _loss(name, exact, {k: v.float() if v.is_floating_point() else v for k, v in batch.items()}).backward()
    _assert_trained_by_luminal(backend)
    truth = _gradients(exact)
    scale = max(g.abs().max().item() for g in truth.values())

    def error(grads: dict[str, torch.Tensor]) -> float:
        return max((grads[n].double() - truth[n]).abs().max().item() for n in truth) / scale

    ours, theirs = error(_gradients(model)), error(_gradients(eager))
    assert ours <= 2 * theirs + 5e-3, (
        f"luminal's bf16 gradients are {ours:.2e} off f32's, eager's {theirs:.2e}"
    )


@pytest.mark.parametrize("name", list(FAMILIES))
def test_twenty_adamw_steps_follow_eagers_loss_curve(name):
    torch.manual_seed(0)
    model = FAMILIES[name].build()
    reference = copy.deepcopy(model)
    compiled, backend = _compiled(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    losses, expected = [], []
    batch = _batch(name)  # one batch, fitted step by step: the loss must fall
    for _ in range(20):
        for net, opt, curve in ((compiled, optimizer, losses), (reference, reference_optimizer, expected)):
            loss = _loss(name, net, batch)
            loss.backward()
            opt.step()
            opt.zero_grad()
            curve.append(loss.item())
    _assert_trained_by_luminal(backend)
    assert len(backend.compiled) == 1, f"{len(backend.compiled)} compiles for 20 steps of one shape"
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(expected), rtol=1e-4, atol=1e-5)
    assert expected[-1] < expected[0], "the reference did not train: the test's learning rate is wrong"
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-4, msg=lambda m, n=n: f"{n}: {m}")
    for (n, b), c in zip(model.named_buffers(), reference.buffers()):  # batch norm's running statistics
        torch.testing.assert_close(b, c, rtol=1e-3, atol=1e-4, msg=lambda m, n=n: f"{n}: {m}")
