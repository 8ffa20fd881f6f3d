"""What tests/training shares: a function's gradients through torch.compile(backend=luminal)
against eager's, and a record of the graphs AOTAutograd handed luminal.

A case compiles ONE function over every input variant of a dtype (one forward and one backward
compile per dtype), sums each output times a fixed random cotangent, and compares the gradients
of every floating-point input with eager's. Inputs are leaves, some of them non-contiguous
(transposed, strided): the backward graph then gets non-contiguous saved tensors too.
"""

from __future__ import annotations

import re
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import luminal
import luminal.training
import torch
from conftest import CountingBackend

# The op tests' coverage record (docs/ops.md's "tested dtypes"): backward graphs count too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
from op_harness import COVERAGE, dtype_name  # noqa: E402

TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-7, torch.bfloat16: 2e-2, torch.float16: 2e-3}

# A variant builds one input from `make(shape)`, as in tests/ops.
Variant = Callable[[Callable[[Sequence[int]], torch.Tensor]], torch.Tensor]


@dataclass
class GradCase:
    """fn(*inputs) whose floating-point inputs get gradients; `backward_op` is the aten overload
    the backward graph must contain (proof that the case exercises it), None for cases whose
    backward is a composition of forward ops."""

    name: str
    fn: Callable[..., Any]
    variants: dict[str, tuple[Variant, ...]]
    backward_op: str | None = None
    dtypes: Sequence[torch.dtype] = (torch.float32, torch.bfloat16)
    tolerance_scale: float = 1.0
    # Per-argument value domains; None means [-2, 2].
    domains: Sequence[tuple[float, float] | None] = ()
    # Arguments that are integer tensors (indices, labels): (position, upper bound).
    int_args: dict[int, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass
class RecordedGraphs:
    """The aten overloads of each graph luminal compiled, by part ('forward', 'backward')."""

    targets: dict[str, set[str]] = field(default_factory=dict)

    def __contains__(self, part: str) -> bool:
        return part in self.targets


def recording_graphs() -> tuple[Any, RecordedGraphs]:
    """A patch of luminal.training.compile_part that records every graph's call targets."""
    recorded = RecordedGraphs()
    real = luminal.training.compile_part

    def record(graph, part, *args, **kwargs):
        targets = recorded.targets.setdefault(part, set())
        targets.update(str(n.target) for n in graph.graph.nodes if n.op == "call_function")
        return real(graph, part, *args, **kwargs)

    return mock.patch.object(luminal.training, "compile_part", record), recorded


def record_coverage(recorded: RecordedGraphs, dtype: torch.dtype) -> None:
    """The overloads of a passing case's graphs count as tested in `dtype` (docs/ops.md)."""
    for targets in recorded.targets.values():
        for target in targets:  # str of an OpOverload: "aten.convolution_backward.default"
            if match := re.fullmatch(r"(\w+)\.(\w+)\.(\w+)", target):
                COVERAGE.setdefault(f"{match[1]}::{match[2]}.{match[3]}", set()).add(dtype_name(dtype))


def _values(shape: Sequence[int], dtype: torch.dtype, gen: torch.Generator, domain) -> torch.Tensor:
    lo, hi = domain or (-2.0, 2.0)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def build_inputs(case: GradCase, dtype: torch.dtype) -> list[tuple[str, list[torch.Tensor]]]:
    gen = torch.Generator().manual_seed(zlib.crc32(f"{case.name}/{dtype}".encode()))
    groups = []
    for variant, builders in case.variants.items():
        args = []
        for i, builder in enumerate(builders):
            if i in case.int_args:
                high = case.int_args[i]
                args.append(builder(lambda shape, h=high: torch.randint(0, h, tuple(shape), generator=gen)))
                continue
            domain = case.domains[i] if i < len(case.domains) else None
            # detach() keeps a view's strides: a non-contiguous leaf.
            args.append(
                builder(lambda shape, d=domain: _values(shape, dtype, gen, d)).detach().requires_grad_()
            )
        groups.append((variant, args))
    return groups


def _cotangents(outputs: list[torch.Tensor], seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype) for o in outputs]


def _flat_outputs(value: Any) -> list[torch.Tensor]:
    leaves = torch.utils._pytree.tree_leaves(value)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def gradients(
    fn: Callable[..., Any], inputs: list[torch.Tensor], seed: int
) -> tuple[list[torch.Tensor], list]:
    """(outputs, gradient of every input that requires grad) of sum(output * cotangent)."""
    outputs = _flat_outputs(fn(*inputs))
    loss = sum((o.double() * g.double()).sum() for o, g in zip(outputs, _cotangents(outputs, seed)))
    wrt = [t for t in inputs if t.requires_grad]
    return outputs, list(torch.autograd.grad(loss, wrt, allow_unused=True))


def run_grad_case(case: GradCase, dtype: torch.dtype) -> RecordedGraphs:
    """Compiles case.fn over every variant of `dtype` at once (fallback='error': every op of
    both graphs native) and compares outputs and gradients with eager's."""
    groups = build_inputs(case, dtype)
    arities = [len(args) for _, args in groups]

    def packed(*flat):
        outs, i = [], 0
        for n in arities:
            outs.append(case.fn(*flat[i : i + n]))
            i += n
        return tuple(outs)

    flat = [t for _, args in groups for t in args]
    eager_inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in flat]
    expected_out, expected = gradients(packed, eager_inputs, seed=1)

    backend = CountingBackend({"fallback": "error"})
    compiled = torch.compile(packed, backend=backend, fullgraph=True, dynamic=False)
    patch, recorded = recording_graphs()
    with patch:
        actual_out, actual = gradients(compiled, flat, seed=1)
    assert len(backend.compiled) == 1, f"{case.name}: {len(backend.compiled)} compiles (did the backend run?)"
    assert isinstance(backend.compiled[0], luminal.TrainingModel), f"{case.name}: not the training path"
    assert "backward" in recorded, f"{case.name}: no backward graph was compiled"
    if case.backward_op is not None:
        assert case.backward_op in recorded.targets["backward"], (
            f"{case.name}: the backward graph has no {case.backward_op}: {sorted(recorded.targets['backward'])}"
        )
    tolerance = TOLERANCE[dtype] * case.tolerance_scale
    for label, got, want in [("output", actual_out, expected_out), ("gradient", actual, expected)]:
        for i, (a, e) in enumerate(zip(got, want)):
            if e is None:
                assert a is None or not a.any(), f"{case.name} {dtype}: {label} {i} should be None or zero"
                continue
            scale = max(1.0, e.abs().max().item())
            torch.testing.assert_close(
                a,
                e,
                rtol=tolerance,
                atol=tolerance * scale,
                msg=lambda m, label=label, i=i: f"{case.name} {dtype} {label} {i}: {m}",
            )
    record_coverage(recorded, dtype)
    return recorded
