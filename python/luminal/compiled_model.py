"""CompiledModel: what luminal's backend returns to dynamo, and what luminal.compile returns."""

from __future__ import annotations

from typing import Any

import torch

from . import _C


class CompiledModel:
    """Runs a compiled program. Called with the same positional arguments as the graph it was
    compiled from (dynamo's placeholders, or an exported program's user inputs). In-place
    mutations (KV-cache updates, BatchNorm statistics) land in the caller's tensors; only the
    user outputs are returned."""

    def __init__(
        self,
        program: _C.CompiledProgram,
        user_input_positions: list[int],
        weight_positions: dict[int, str],
        weights: dict[str, torch.Tensor],
        python_stats: dict[str, Any],
    ) -> None:
        self._program = program
        self._user_input_positions = user_input_positions
        self._weight_positions = sorted(weight_positions.items())
        # Keeps the caller's weights alive while C++ holds their pointers.
        self._weights = weights
        self._weight_ptrs = {name: t.data_ptr() for name, t in weights.items()}
        self._python_stats = python_stats
        self.compile_count = 1

    def __call__(self, *args: Any) -> list[torch.Tensor]:
        # A parameter whose storage was replaced (`p.data = ...`) must be re-bound, not read stale.
        for position, name in self._weight_positions:
            tensor = args[position]
            if tensor.data_ptr() != self._weight_ptrs[name]:
                self._program.rebind_weight(name, tensor)
                self._weights[name] = tensor
                self._weight_ptrs[name] = tensor.data_ptr()
        return self._program.run([args[p] for p in self._user_input_positions])

    @property
    def stats(self) -> dict[str, Any]:
        """Compile time per phase (ms), node and kernel counts, and the ops run through a fallback."""
        return {**self._python_stats, **self._program.stats}

    @property
    def input_names(self) -> list[str]:
        return list(self._program.input_names)

    def ir_text(self) -> str:
        """The primitive IR the runtime executes, one node per line."""
        return self._program.ir_text()
