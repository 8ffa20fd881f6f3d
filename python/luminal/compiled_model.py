"""CompiledModel: what luminal's backend returns to dynamo, and what luminal.compile returns."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import _C
from .export import PythonOutputs, size_carrier
from .input_device_moves import move_inputs
from .subclass_weights import bound_tensors, inner_paths, storage_key_fn


@dataclass
class BoundProgram:
    """A compiled program and how a call's positional arguments map onto it."""

    program: _C.CompiledProgram
    user_input_positions: list[int]
    weight_positions: dict[int, str]
    # The caller's weights, kept alive while C++ holds their pointers.
    weights: dict[str, torch.Tensor]
    python_stats: dict[str, Any] = field(default_factory=dict)
    # Positions of SymInt arguments passed to the program as an empty [value, 0] tensor.
    size_carrier_positions: frozenset[int] = frozenset()
    # Outputs computed in Python from the call's arguments (symbolic ints, ...).
    python_outputs: PythonOutputs | None = None
    # Positions of the program's outputs that are numbers read from tensor data (`.item()`).
    item_outputs: list[int] = field(default_factory=list)

    # Weights read as graph attributes (an optimizer's parameters), not passed as arguments.
    attribute_weights: list[str] = field(default_factory=list)
    # Weight positions whose argument is a DTensor (a tensor-parallel shard): the program binds
    # its local tensor.
    sharded_weight_positions: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        # Where each tensor-subclass weight keeps its inner tensors (None for a plain tensor).
        self.inner_paths = {name: inner_paths(t) for name, t in self.weights.items()}
        self.storage_key_of = {name: storage_key_fn(self.inner_paths[name]) for name in self.weights}
        # (position, name, sharded, storage key function) per weight argument, in position order,
        # and the storage keys of the weights bound now, in the same order: a call compares the
        # whole list at once and walks the weights only when one of them moved.
        self.weight_arguments = [
            (position, name, position in self.sharded_weight_positions, self.storage_key_of[name])
            for position, name in sorted(self.weight_positions.items())
        ]
        self.argument_keys = [key(self.weights[name]) for _, name, _, key in self.weight_arguments]
        self.attribute_keys = [self.storage_key_of[name](self.weights[name]) for name in self.attribute_weights]

    def argument_storage_keys(self, args: tuple) -> list:
        return [key(args[p].to_local() if sharded else args[p]) for p, _, sharded, key in self.weight_arguments]

    def rebind_moved_arguments(self, args: tuple, keys: list) -> None:
        """Re-binds each weight argument whose storage was replaced (`p.data = ...`, or another
        module's weight where dynamo reuses the graph for a module of the same shapes): never
        read stale."""
        for index, (position, name, sharded, _) in enumerate(self.weight_arguments):
            if keys[index] != self.argument_keys[index]:
                self.rebind(name, args[position].to_local() if sharded else args[position])
        self.argument_keys = keys

    def rebind_moved_attributes(self) -> None:
        keys = [self.storage_key_of[name](self.weights[name]) for name in self.attribute_weights]
        if keys != self.attribute_keys:
            for index, name in enumerate(self.attribute_weights):
                if keys[index] != self.attribute_keys[index]:
                    self.rebind(name, self.weights[name])
            self.attribute_keys = keys

    def rebind(self, name: str, tensor: torch.Tensor) -> None:
        for part_name, part in bound_tensors(name, tensor, self.inner_paths[name]).items():
            self.program.rebind_weight(part_name, part)
        self.weights[name] = tensor


class CompiledModel:
    """Runs a compiled program. Called with the same positional arguments as the graph it was
    compiled from (dynamo's placeholders, or an exported program's user inputs). In-place
    mutations (KV-cache updates, BatchNorm statistics) land in the caller's tensors; only the
    user outputs are returned.

    The dynamo backend compiles on the first call rather than inside dynamo's frame: export run
    inside that frame inherits dynamo's guards (written against dynamo's `L[...]` namespace),
    which break run_decompositions() once a dim is dynamic."""

    def __init__(
        self, compile_fn: Callable[[tuple], BoundProgram], input_moves: dict[int, torch.device] | None = None
    ) -> None:
        self._compile_fn = compile_fn
        # Arguments the graph copied to a GPU itself, copied here instead (input_device_moves.py).
        self._input_moves = input_moves or {}
        self._bound: BoundProgram | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, bound: BoundProgram) -> "CompiledModel":
        model = cls(lambda args: bound)
        model._bound = bound
        return model

    def _compiled(self, args: tuple) -> BoundProgram:
        with self._lock:
            if self._bound is None:
                self._bound = self._compile_fn(args)
            return self._bound

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        if self._input_moves:
            args = move_inputs(args, self._input_moves)
        bound = self._bound or self._compiled(args)
        keys = bound.argument_storage_keys(args)
        if keys != bound.argument_keys:
            bound.rebind_moved_arguments(args, keys)
        if bound.attribute_weights:
            bound.rebind_moved_attributes()
        carriers = bound.size_carrier_positions
        inputs = [size_carrier(args[p]) if p in carriers else args[p] for p in bound.user_input_positions]
        outputs = bound.program.run(inputs)
        for position in bound.item_outputs:
            outputs[position] = outputs[position].item()
        if bound.python_outputs is not None:
            values = bound.python_outputs.program(*args)
            for position, value in zip(bound.python_outputs.positions, values):
                outputs.insert(position, value)
        return outputs

    @property
    def is_compiled(self) -> bool:
        return self._bound is not None

    @property
    def stats(self) -> dict[str, Any]:
        """Compile time per phase (ms), node and kernel counts, the ops run through a fallback, the
        runtime's name and the bytes the last call copied. Empty until the first call has compiled
        the model."""
        if self._bound is None:
            return {}
        return {**self._bound.python_stats, **self._bound.program.stats}

    @property
    def input_names(self) -> list[str]:
        return list(self._bound.program.input_names) if self._bound else []

    def ir_text(self) -> str:
        """The primitive IR the runtime executes, one node per line."""
        return self._bound.program.ir_text() if self._bound else ""
