"""Decompositions of torch's multi-tensor `_foreach_*` ops into one elementwise op per tensor.

A compiled optimizer step (`torch.compile(optimizer.step)` with `foreach=True`, AdamW's and SGD's
default) is a chain of `_foreach_*` ops over the parameter list. torch has no decomposition for
them, so without these each ran through the ATen fallback as its own step: a fusion barrier
around every op of the update. Split per tensor, the translator sees plain elementwise ops and
fusion makes one kernel per parameter of AdamW's whole update.

The table is built from the ops' schemas: a `Tensor[]` or `Scalar[]` argument is read per list
position, anything else is passed to every element's op as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten


def _addc(combine: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[..., torch.Tensor]:
    """addcmul / addcdiv with the value given per element as a Scalar or a 0-d tensor
    (`.Tensor` overloads: one entry of `scalars` per list position)."""

    def op(self: torch.Tensor, tensor1: torch.Tensor, tensor2: torch.Tensor, value: Any = 1) -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            return self + combine(tensor1, tensor2) * value.to(self.dtype)
        return (torch.addcmul if combine is torch.mul else torch.addcdiv)(self, tensor1, tensor2, value=value)

    return op


def _element_op(name: str, overload: str) -> Callable[..., Any] | None:
    """The one-tensor op a `_foreach_<name>.<overload>` applies to each list element."""
    special: dict[str, Callable[..., Any]] = {
        "addcmul": _addc(torch.mul),
        "addcdiv": _addc(torch.div),
        "norm": lambda t, ord=2, dtype=None: torch.linalg.vector_norm(t, ord, dtype=dtype),
        "max": torch.amax,
        "zero": torch.zeros_like,
        "copy": lambda t, src, non_blocking=False: aten.copy.default(t, src, non_blocking),
        "clone": lambda t, memory_format=None: torch.clone(
            t, memory_format=memory_format or torch.preserve_format
        ),
    }
    if name in special:
        return special[name]
    # maximum/minimum with a Scalar are clamps: torch.maximum takes tensors only.
    if name in ("maximum", "minimum") and overload in ("Scalar", "ScalarList"):
        return torch.clamp_min if name == "maximum" else torch.clamp_max
    if name == "mm":
        return torch.mm
    return getattr(torch, name, None)


def _is_per_element(argument: torch._C.Argument, name: str, overload: str) -> bool:
    kind = str(argument.type)
    if kind in ("List[Tensor]", "List[number]", "List[float]", "List[int]"):
        return True
    # addcmul/addcdiv.Tensor: a 1-d tensor of one value per list position.
    return overload == "Tensor" and name in ("addcmul", "addcdiv") and argument.name == "scalars"


def _decomposition(
    op: torch._ops.OpOverload, name: str, overload: str, element_op: Callable[..., Any]
) -> Callable:
    arguments = op._schema.arguments

    def decompose(*args: Any, **kwargs: Any) -> list[torch.Tensor]:
        bound = list(args) + [kwargs.get(a.name, a.default_value) for a in arguments[len(args) :]]
        per_element = [_is_per_element(a, name, overload) for a in arguments]
        lengths = {len(v) for v, each in zip(bound, per_element) if each and isinstance(v, (list, tuple))}
        if len(lengths) > 1:  # torch checks this too; never zip a shorter list silently
            raise ValueError(f"{op}: tensor lists of different lengths {sorted(lengths)}")
        count = lengths.pop()  # every _foreach_* op has a tensor list
        positional = [a for a in arguments if not a.kwarg_only]
        results = []
        for i in range(count):
            values = [v[i] if each else v for v, each in zip(bound, per_element)]
            call_args = values[: len(positional)]
            call_kwargs = {a.name: v for a, v in zip(arguments[len(positional) :], values[len(positional) :])}
            results.append(element_op(*call_args, **call_kwargs))
        return results

    return decompose


def foreach_decompositions() -> dict[torch._ops.OpOverload, Callable]:
    """{_foreach_* overload: its per-tensor decomposition}, for the functional overloads (export
    and AOTAutograd functionalise the in-place ones first) whose element op torch has."""
    table: dict[torch._ops.OpOverload, Callable] = {}
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::_foreach_") or schema.name.endswith("_"):
            continue
        overload = schema.overload_name or "default"
        if overload == "out" or overload.endswith("_out"):
            continue
        name = schema.name[len("aten::_foreach_") :]
        element_op = _element_op(name, overload)
        if element_op is None:
            continue
        op = getattr(getattr(aten, f"_foreach_{name}"), overload)
        table[op] = _decomposition(op, name, overload, element_op)
    return table
