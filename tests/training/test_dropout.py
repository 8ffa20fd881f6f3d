"""Dropout in training: masks are random, so the tests compare statistics and the relation
between forward and backward, not values. The mask is drawn by torch's own bernoulli kernel (the
one ATen call a native translation keeps), so torch.manual_seed governs it."""

from __future__ import annotations

import luminal
import pytest
import torch
import torch.nn.functional as F
from conftest import CountingBackend
from grad_harness import record_coverage, recording_graphs
from training_models import VOCAB, families


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_keeps_the_right_fraction_scales_and_masks_the_gradient_alike(p):
    x = torch.ones(64, 256, requires_grad=True)
    backend = CountingBackend()
    patch, recorded = recording_graphs()
    with patch:
        out = torch.compile(lambda t: F.dropout(t, p, training=True), backend=backend)(x)
    kept = out != 0
    assert abs(kept.float().mean().item() - (1 - p)) < 0.02
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / (1 - p)))
    out.sum().backward()
    # The backward's mask is the forward's: a dropped element gets no gradient.
    torch.testing.assert_close(x.grad, kept.float() / (1 - p))
    assert backend.compiled[0].stats["forward"]["fallback_ops"] == ["aten::bernoulli.p"]
    assert "aten.native_dropout.default" in recorded.targets["forward"]
    record_coverage(recorded, x.dtype)


def test_dropout_masks_follow_torch_manual_seed():
    x = torch.ones(8, 64, requires_grad=True)
    compiled = torch.compile(lambda t: F.dropout(t, 0.5, training=True), backend="luminal")
    torch.manual_seed(3)
    first = compiled(x)
    torch.manual_seed(3)
    again = compiled(x)
    other = compiled(x)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_dropout_zero_and_eval_are_identity():
    x = torch.randn(4, 8, requires_grad=True)
    out = torch.compile(
        lambda t: F.dropout(t, 0.0, training=True) + F.dropout(t, 0.7, training=False), backend="luminal"
    )(x)
    torch.testing.assert_close(out, 2 * x)


def test_gpt2_with_dropout_trains():
    """GPT-2's default dropout (0.1 everywhere): the compiled model's loss falls over 20 AdamW
    steps on one batch, as eager's does, and its losses stay near eager's (different masks)."""
    torch.manual_seed(0)
    model = families.gpt2()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    compiled = torch.compile(model, backend="luminal")
    ids = torch.randint(0, VOCAB, (4, 16), generator=torch.Generator().manual_seed(0))
    losses = []
    for _ in range(20):
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5, losses


def test_attention_dropout_without_grad_is_an_error_naming_the_fix():
    """A model left in train mode, run under no_grad, takes the inference path, where fused
    attention with dropout is not translated: an error, never attention without its dropout."""
    q = torch.randn(1, 2, 4, 8)
    compiled = torch.compile(lambda t: F.scaled_dot_product_attention(t, t, t, dropout_p=0.1), backend="luminal")
    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(q)
    error = getattr(info.value, "inner_exception", info.value)
    assert isinstance(error, luminal.UnsupportedError)
    assert "dropout_p=0.1" in str(error) and "model.eval()" in str(error)


def test_attention_dropout_with_grad_trains():
    """With grad enabled, attention is traced as its math and its dropout is native_dropout."""
    q = torch.randn(1, 2, 16, 8, requires_grad=True)
    out = torch.compile(lambda t: F.scaled_dot_product_attention(t, t, t, dropout_p=0.5), backend="luminal")(q)
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
