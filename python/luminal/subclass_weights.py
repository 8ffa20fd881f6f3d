"""Weights held as tensor subclasses (torchao's quantized Int8Tensor, IntxUnpackedToInt8Tensor):
bound by pointer through the plain tensors they are made of.

torch.export cannot keep a subclass parameter in its graph: it unwraps it with a
parametrization, so a weight `w` becomes the plain parameters `parametrizations.w.original0`,
`original1`, ... (torch/_functorch/_aot_autograd/subclass_parametrization.py), one per inner
tensor, depth first in `__tensor_flatten__` order, each sharing its storage with the caller's
inner tensor. Binding those names to the caller's inner tensors keeps the weights out of the
archive, where they would be a copy, cached on disk and served to a later model of the same
shapes, and lets each call rebind a model whose quantized weights are other tensors.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass


def inner_paths(tensor: Any) -> list[tuple[str, ...]] | None:
    """The attribute paths from a traceable subclass to the plain tensors it is made of, in the
    order export numbers them; None for a plain tensor."""
    if not is_traceable_wrapper_subclass(tensor):
        return None
    paths: list[tuple[str, ...]] = []

    def collect(value: Any, path: tuple[str, ...]) -> None:
        if not is_traceable_wrapper_subclass(value):
            paths.append(path)
            return
        names, _ = value.__tensor_flatten__()
        for name in names:
            collect(getattr(value, name), (*path, name))

    collect(tensor, ())
    return paths


def inner_tensor(tensor: Any, path: tuple[str, ...]) -> torch.Tensor:
    for name in path:
        tensor = getattr(tensor, name)
    return tensor


def parametrized_name(name: str, index: int) -> str:
    """The FQN export gives inner tensor `index` of the subclass weight `name`."""
    owner, _, attribute = name.rpartition(".")
    return f"{owner + '.' if owner else ''}parametrizations.{attribute}.original{index}"


def bound_tensors(name: str, tensor: Any, paths: list[tuple[str, ...]] | None) -> dict[str, torch.Tensor]:
    """What the weight `name` binds in the program: itself, or, for a subclass whose inner tensors
    are at `paths` (inner_paths), each inner tensor under its export name."""
    if paths is None:
        return {name: tensor}
    return {parametrized_name(name, index): inner_tensor(tensor, path) for index, path in enumerate(paths)}


def plain_weights(weights: dict[str, Any]) -> dict[str, torch.Tensor]:
    """`weights` with each subclass replaced by its inner tensors under their export names."""
    plain: dict[str, torch.Tensor] = {}
    for name, tensor in weights.items():
        plain.update(bound_tensors(name, tensor, inner_paths(tensor)))
    return plain


def storage_key_fn(paths: list[tuple[str, ...]] | None) -> Callable[[Any], int | tuple[int, ...]]:
    """What changes when a weight's storage is replaced, as a function of the weight: its data
    pointer, or, for a subclass whose inner tensors are at `paths` (inner_paths, found once:
    flattening on every call cost 7-11 us per weight), theirs. A subclass's own data_ptr() is 0
    for every quantized weight. Built from attrgetter and map so that the walk to the inner
    tensors runs in C: a decode step checks every weight, and walking them in Python cost
    0.1-0.25 ms of a 6 ms int8 step."""
    data_ptr = torch.Tensor.data_ptr
    if paths is None:
        return data_ptr
    inner = attrgetter(*(".".join(path) for path in paths))
    if len(paths) == 1:
        return lambda tensor: (data_ptr(inner(tensor)),)
    return lambda tensor: tuple(map(data_ptr, inner(tensor)))
