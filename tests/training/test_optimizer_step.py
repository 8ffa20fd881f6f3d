"""torch.compile(optimizer.step, backend="luminal"): the foreach updates of parameters and
optimizer state run through the in-place mutation path (the caller's tensors are written, never
copies), every `_foreach_*` op split into per-tensor elementwise ops that fuse (no ATen
fallback), and 20 steps give eager's parameters."""

from __future__ import annotations

import copy

import luminal
import pytest
import torch
from conftest import CountingBackend
from training_models import MLP

OPTIMIZERS = {
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01, foreach=True),
    "adamw_amsgrad": lambda params: torch.optim.AdamW(params, lr=1e-2, amsgrad=True, foreach=True),
    "sgd_momentum": lambda params: torch.optim.SGD(
        params, lr=1e-2, momentum=0.9, nesterov=True, foreach=True
    ),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-2, weight_decay=1e-3, foreach=True),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_compiled_step_gives_eagers_parameters_after_twenty_steps(name):
    """Against eager, and against the same compiled step run by torch's own kernels (aot_eager).
    A compiled AdamW computes its bias corrections 1 - beta ** step from f32 step tensors where
    eager uses Python floats: with beta2 = 0.999 that moves the parameters by ~1e-6 after 20
    steps under any backend. So luminal must match aot_eager tightly and eager to that margin."""
    torch.manual_seed(0)
    model = MLP()
    same_graph, reference = copy.deepcopy(model), copy.deepcopy(model)
    optimizer = OPTIMIZERS[name](model.parameters())
    same_graph_optimizer = OPTIMIZERS[name](same_graph.parameters())
    reference_optimizer = OPTIMIZERS[name](reference.parameters())
    backend = CountingBackend({"fallback": "error"})
    runs = (
        (model, optimizer, torch.compile(optimizer.step, backend=backend)),
        (same_graph, same_graph_optimizer, torch.compile(same_graph_optimizer.step, backend="aot_eager")),
        (reference, reference_optimizer, reference_optimizer.step),
    )
    pointers = [p.data_ptr() for p in model.parameters()]
    x, target = torch.randn(8, 12), torch.randn(8, 3)
    for _ in range(20):
        for net, opt, step in runs:
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), target).backward()
            step()
    assert backend.compiled, "luminal compiled nothing"
    assert all(isinstance(c, luminal.CompiledModel) for c in backend.compiled)
    # The first step creates the state (momentum buffers), later steps reuse one graph.
    assert len(backend.compiled) <= 2
    assert [p.data_ptr() for p in model.parameters()] == pointers, "the step replaced parameters"
    for other, other_optimizer, (rtol, atol) in (
        (same_graph, same_graph_optimizer, (1e-5, 5e-7)),
        (reference, reference_optimizer, (1e-4, 5e-6)),
    ):
        for (n, p), q in zip(model.named_parameters(), other.parameters()):
            torch.testing.assert_close(p, q, rtol=rtol, atol=atol, msg=lambda m, n=n: f"{n}: {m}")
            for key, value in other_optimizer.state[q].items():
                torch.testing.assert_close(
                    optimizer.state[p][key],
                    value,
                    rtol=rtol,
                    atol=atol,
                    msg=lambda m, n=n, key=key: f"{n} {key}: {m}",
                )


def test_foreach_ops_become_elementwise_ops():
    """The decomposition table splits each `_foreach_*` op per tensor, so the archive the core
    reads has no foreach op left for the ATen fallback."""
    from luminal.foreach_decompositions import foreach_decompositions

    table = foreach_decompositions()
    aten = torch.ops.aten
    for op in (
        aten._foreach_add.List,
        aten._foreach_addcdiv.Scalar,
        aten._foreach_lerp.Scalar,
        aten._foreach_sqrt.default,
    ):
        assert op in table
    tensors = [torch.randn(3), torch.randn(2, 2)]
    others = [torch.randn(3), torch.randn(2, 2)]
    for got, want in zip(
        table[aten._foreach_add.List](tensors, others, alpha=2), torch._foreach_add(tensors, others, alpha=2)
    ):
        torch.testing.assert_close(got, want)
    scalars = torch.tensor([0.5, 2.0])
    for got, want in zip(
        table[aten._foreach_addcmul.Tensor](tensors, others, tensors, scalars),
        torch._foreach_addcmul(tensors, others, tensors, scalars),
    ):
        torch.testing.assert_close(got, want)
    for got, want in zip(
        table[aten._foreach_pow.ScalarAndTensor](0.9, tensors), torch._foreach_pow(0.9, tensors)
    ):
        torch.testing.assert_close(got, want)
