"""luminal.compile: the ahead-of-time path from an ExportedProgram or a .pt2 file."""

from __future__ import annotations

import os
from typing import Any

import torch

from . import _C
from .backend import default_factory
from .compiled_model import BoundProgram, CompiledModel
from .decompositions import decomposition_table
from .errors import UserError
from .export import serialize
from .options import core_options, validate_options


def compile(program: torch.export.ExportedProgram | str | os.PathLike, options: dict | None = None) -> CompiledModel:  # noqa: A001
    """Compiles an exported program (after `run_decompositions()` or not) or a .pt2 file.

    The result is called with the program's user inputs as positional tensors and returns its
    user outputs. An ExportedProgram's weights are bound by pointer; a file's come from the archive.
    """
    options = validate_options(options)
    factory = default_factory([], options.get("runtime"))
    if isinstance(program, torch.export.ExportedProgram):
        ep = program.run_decompositions(decomposition_table())
        weights: dict[str, torch.Tensor] = {**ep.state_dict, **{k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}}
        weights = {name: t.detach() for name, t in weights.items()}
        compiled = _C.compile_pt2(serialize(ep, set(weights)), factory, core_options(options), weights)
    elif isinstance(program, (str, os.PathLike)):
        if not os.path.exists(program):
            raise UserError(f"no such PT2 file: {os.fspath(program)!r}")
        weights = {}
        compiled = _C.compile_pt2_file(os.fspath(program), factory, core_options(options))
    else:
        raise UserError(f"luminal.compile takes an ExportedProgram or a .pt2 path, got {type(program).__name__}")
    positions = list(range(len(compiled.input_names)))
    return CompiledModel.of(BoundProgram(compiled, positions, {}, weights))
