"""luminal.compile: the ahead-of-time path from an ExportedProgram or a .pt2 file."""

from __future__ import annotations

import os

import torch

from . import _C
from .backend import default_factory, log_fallbacks
from .compiled_model import BoundProgram, CompiledModel
from .decompositions import decomposition_table
from .errors import UserError
from .export import quiet_torch_internals, serialize
from .options import core_options, validate_options


def compile(program: torch.export.ExportedProgram | str | os.PathLike, options: dict | None = None) -> CompiledModel:  # noqa: A001
    """Compiles an exported program, or a .pt2 file written by torch.export.save.

    Either may be at any IR level: luminal runs its own decompositions. The result is called
    with the program's user inputs as positional tensors and returns its user outputs; the
    program's weights are bound by pointer (a file's are loaded once by torch.export.load).
    """
    options = validate_options(options)
    factory = default_factory([], options.get("runtime"))
    if isinstance(program, (str, os.PathLike)):
        if not os.path.exists(program):
            raise UserError(f"no such PT2 file: {os.fspath(program)!r}")
        # Our reader first: it names the entry and field at fault, and refuses an entry far
        # larger than its tensor before torch's loader would inflate and allocate it.
        _C.check_pt2_file(os.fspath(program), float(options.get("payload_size_ratio", 4.0)))
        try:
            program = torch.export.load(os.fspath(program))
        except Exception as error:  # torch raises many types for a bad archive
            raise UserError(f"{os.fspath(program)!r} is not a PT2 archive torch can load: {error}") from error
    if not isinstance(program, torch.export.ExportedProgram):
        raise UserError(f"luminal.compile takes an ExportedProgram or a .pt2 path, got {type(program).__name__}")
    with quiet_torch_internals():
        ep = program.run_decompositions(decomposition_table())
        tensors = {**ep.state_dict, **{k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}}
        weights = {name: t.detach() for name, t in tensors.items()}
        archive = serialize(ep, set(weights))
    compiled = _C.compile_pt2(archive, factory, core_options(options), weights)
    log_fallbacks(compiled.stats)
    positions = list(range(len(compiled.input_names)))
    return CompiledModel.of(BoundProgram(compiled, positions, {}, weights))
