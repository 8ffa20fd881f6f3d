"""The harness tests/ops/ shares: one aten op through the real torch.compile path against eager.

Each case compiles ONE function (fullgraph, dynamic=False) that applies the op to every input
variant of every dtype it covers, so one compile checks all of them (a compile costs ~1 s on
the CI's two cores; per-dtype compiles would not fit the suite's time budget). On a failure
the message lists each (dtype, variant) that differed. The exported aten overloads of every
passing case are recorded; with LUMINAL_OPS_COVERAGE=<path> set, the session writes them with
their dtypes as JSON at exit for scripts/gen_ops_doc.py (merged into an existing file).
"""

from __future__ import annotations

import atexit
import io
import json
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch

import luminal
import luminal.backend
import luminal.export
from conftest import CountingBackend

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i8, i16, i32, i64, u8 = torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8
FLOATS = (f32, f64, f16, bf16)
INTS = (i8, i16, i32, i64, u8)
ALL = FLOATS + INTS + (torch.bool,)
# Dtypes that get every shape variant; the others get the short list (same code paths, and the
# suite must stay within its time budget).
FULL_VARIANT_DTYPES = (f32, i64)

TOLERANCE = {f32: 1e-5, f64: 1e-7, bf16: 2e-2, f16: 2e-3}

# overload -> dtype names it passed in, filled by every passing case.
COVERAGE: dict[str, set[str]] = {}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---- input values ----


def values(shape: Sequence[int], dtype: torch.dtype, gen: torch.Generator, domain: tuple[float, float] | None) -> torch.Tensor:
    """Random values of `dtype` in `domain` (default: [-5, 5] for floats, [-9, 9] for ints)."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        lo, hi = domain or (-5.0, 5.0)
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    lo, hi = domain or (-9, 9)
    info = torch.iinfo(dtype)
    lo, hi = max(int(lo), info.min), min(int(hi), info.max)
    return torch.randint(lo, hi + 1, tuple(shape), generator=gen, dtype=torch.int64).to(dtype)


# A variant builds one input from `make(shape)`: the layout variants (transposed, sliced,
# expanded) give non-contiguous inputs of a logical shape.
Variant = Callable[[Callable[[Sequence[int]], torch.Tensor]], torch.Tensor]

UNARY_VARIANTS: dict[str, Variant] = {
    "2d": lambda m: m((3, 4)),
    "0d": lambda m: m(()),
    "size1": lambda m: m((1, 4, 1)),
    "empty": lambda m: m((0, 4)),
    "transposed": lambda m: m((4, 3)).t(),
    "sliced": lambda m: m((3, 8))[:, 1:7:2],
    "expanded": lambda m: m((3, 1)).expand(3, 4),
}
UNARY_SHORT = ("transposed",)

BINARY_VARIANTS: dict[str, tuple[Variant, Variant]] = {
    "same": (lambda m: m((3, 4)), lambda m: m((3, 4))),
    "broadcast": (lambda m: m((3, 1)), lambda m: m((1, 4))),
    "rank": (lambda m: m((2, 3, 4)), lambda m: m((4,))),
    "0d_lhs": (lambda m: m(()), lambda m: m((3, 4))),
    "0d_rhs": (lambda m: m((2, 3)), lambda m: m(())),
    "noncontiguous": (lambda m: m((4, 3)).t(), lambda m: m((3, 8))[:, ::2]),
    "empty": (lambda m: m((0, 4)), lambda m: m((4,))),
    "expanded": (lambda m: m((1, 4)).expand(3, 4), lambda m: m((3, 4))),
}
BINARY_SHORT = ("broadcast",)


@dataclass
class Case:
    """One op: `fn(*tensors)` over `dtypes`, with `variants` naming tuples of input builders."""

    name: str
    fn: Callable[..., Any]
    dtypes: Sequence[torch.dtype] = ALL
    variants: dict[str, tuple[Variant, ...]] | None = None  # default: by arity
    arity: int = 1
    short: Sequence[str] | None = None
    # Per-argument value domains, e.g. ((0.1, 5),) for log; None means the default.
    domains: Sequence[tuple[float, float] | None] = ()
    # Scales the dtype's tolerance (composed transcendental functions, long reductions).
    tolerance_scale: float = 1.0
    # Exact inputs: callables dtype -> tuple of tensors (extra hand-picked cases).
    extra_inputs: Sequence[Callable[[torch.dtype], tuple[torch.Tensor, ...]]] = ()
    # dtype -> reason, for dtypes torch supports but luminal does not (listed, never silent).
    gaps: dict[torch.dtype, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


def _variants(case: Case) -> dict[str, tuple[Variant, ...]]:
    if case.variants is not None:
        return case.variants
    if case.arity == 1:
        return {k: (v,) for k, v in UNARY_VARIANTS.items()}
    if case.arity == 2:
        return BINARY_VARIANTS
    raise ValueError(f"case {case.name}: give variants for arity {case.arity}")


def _short(case: Case) -> Sequence[str]:
    if case.short is not None:
        return case.short
    return UNARY_SHORT if case.arity == 1 else BINARY_SHORT if case.arity == 2 else list(_variants(case))[:2]


def build_inputs(case: Case, dtype: torch.dtype) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    gen = torch.Generator().manual_seed(zlib.crc32(f"{case.name}/{dtype}".encode()))
    variants = _variants(case)
    names = list(variants) if dtype in FULL_VARIANT_DTYPES else [n for n in _short(case) if n in variants]
    out = []
    for name in names:
        args = []
        for i, builder in enumerate(variants[name]):
            domain = case.domains[i] if i < len(case.domains) else None
            args.append(builder(lambda shape, d=domain: values(shape, dtype, gen, d)))
        out.append((name, tuple(args)))
    for i, extra in enumerate(case.extra_inputs):
        out.append((f"extra{i}", extra(dtype)))
    return out


# ---- comparison ----


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def mismatch(actual: Any, expected: Any, scale: float = 1.0) -> str | None:
    """None when equal as the suite defines it, else a short description."""
    actual_flat, expected_flat = _flatten(actual), _flatten(expected)
    if len(actual_flat) != len(expected_flat):
        return f"{len(actual_flat)} outputs, eager has {len(expected_flat)}"
    for i, (a, e) in enumerate(zip(actual_flat, expected_flat)):
        if not isinstance(e, torch.Tensor):
            if a != e:
                return f"output {i}: {a!r} != {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"output {i} is {type(a).__name__}, eager gives a tensor"
        if a.dtype != e.dtype:
            return f"output {i} dtype {a.dtype}, eager {e.dtype}"
        if a.shape != e.shape:
            return f"output {i} shape {tuple(a.shape)}, eager {tuple(e.shape)}"
        if not e.is_floating_point():
            if not torch.equal(a, e):
                return f"output {i}: {a.tolist()} != eager {e.tolist()}"
            continue
        tol = TOLERANCE[e.dtype] * scale
        try:
            torch.testing.assert_close(a, e, rtol=tol, atol=tol, equal_nan=True)
        except AssertionError as error:
            return f"output {i}: {str(error).strip().splitlines()[-3:]}"
    return None


# ---- running ----


def _record_targets(archive: bytes, into: set[str]) -> None:
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        for name in z.namelist():
            if name.endswith(".json") and "/models/" in f"/{name}":
                text = z.read(name).decode("utf-8", "replace")
                for target in re.findall(r'"target":\s*"torch\.ops\.(\w+)\.(\w+)\.(\w+)"', text):
                    into.add(f"{target[0]}::{target[1]}.{target[2]}")


def compile_and_run(fn: Callable[..., Any], flat_inputs: list[torch.Tensor], targets: set[str]) -> tuple[Any, int]:
    """fn(*flat_inputs) through torch.compile(backend=luminal); returns (outputs, compiles).
    fallback='error': an op test proves a native translation, never the ATen fallback's."""
    backend = CountingBackend({"fallback": "error"})
    compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
    real_export = luminal.backend.cached_export

    def recording_export(*args, **kwargs):
        exported, hit = real_export(*args, **kwargs)
        _record_targets(exported.archive, targets)
        return exported, hit

    with mock.patch.object(luminal.backend, "cached_export", recording_export):
        outputs = compiled(*flat_inputs)
    return outputs, len(backend.compiled)


def compile_undecomposed(fn: Callable[..., Any], flat_inputs: list[torch.Tensor], targets: set[str]) -> tuple[Any, int]:
    """fn(*flat_inputs) exported without run_decompositions() and handed to the core directly: the
    path of a PT2 archive made elsewhere, for Core ATen overloads that both Python paths decompose
    before the translator could see them. Returns (outputs, compiles) as compile_and_run does."""

    class Program(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    archive = luminal.export.serialize(torch.export.export(Program(), tuple(flat_inputs)), set())
    _record_targets(archive, targets)
    compiled = luminal._C.compile_pt2(archive, luminal._C.cpu_factory_capsule(), {"fallback": "error"}, {})
    structure = torch.utils._pytree.tree_structure(fn(*flat_inputs))
    return torch.utils._pytree.tree_unflatten(compiled.run(list(flat_inputs)), structure), 1


def run_case(case: Case, dtypes: Sequence[torch.dtype] | None = None,
             compile: Callable[..., tuple[Any, int]] = compile_and_run) -> None:  # noqa: A002
    """Compiles case.fn over every (dtype, variant) at once and compares with eager."""
    dtypes = [d for d in (dtypes or case.dtypes) if d not in case.gaps]
    groups: list[tuple[str, tuple[torch.Tensor, ...], Any]] = []
    for dtype in dtypes:
        for variant, args in build_inputs(case, dtype):
            try:
                expected = case.fn(*args)
            except (RuntimeError, TypeError, NotImplementedError, ValueError):
                continue  # torch does not support this dtype (or shape) either
            groups.append((f"{dtype_name(dtype)}/{variant}", args, expected))
    assert groups, f"{case.name}: eager rejects every input; the case is wrong"
    arities = [len(args) for _, args, _ in groups]

    def packed(*flat):
        outs, i = [], 0
        for n in arities:
            outs.append(case.fn(*flat[i : i + n]))
            i += n
        return tuple(outs)

    flat = [t for _, args, _ in groups for t in args]
    targets: set[str] = set()
    actual, compiles = compile(packed, flat, targets)
    assert compiles == 1, f"{case.name}: luminal compiled {compiles} times (expected once: did the backend run?)"
    failures = []
    for (label, _, expected), got in zip(groups, actual):
        problem = mismatch(got, expected, case.tolerance_scale)
        if problem:
            failures.append(f"  {label}: {problem}")
    assert not failures, f"{case.name}: {len(failures)} of {len(groups)} differ from eager:\n" + "\n".join(failures)
    tested = sorted({label.split("/")[0] for label, _, _ in groups})
    for target in targets:
        COVERAGE.setdefault(target, set()).update(tested)


def record_coverage(archive: bytes, dtype: torch.dtype) -> None:
    """For a test that compiles an archive of its own (not through run_case): its overloads passed
    in `dtype`."""
    targets: set[str] = set()
    _record_targets(archive, targets)
    for target in targets:
        COVERAGE.setdefault(target, set()).add(dtype_name(dtype))


def write_coverage() -> None:
    path = os.environ.get("LUMINAL_OPS_COVERAGE")
    if not path or not COVERAGE:
        return
    existing: dict[str, list[str]] = {}
    if os.path.exists(path):
        with open(path) as f:
            existing = json.load(f)
    for op, dtypes in COVERAGE.items():
        existing[op] = sorted(set(existing.get(op, [])) | dtypes)
    with open(path, "w") as f:
        json.dump(dict(sorted(existing.items())), f, indent=1)


atexit.register(write_coverage)
