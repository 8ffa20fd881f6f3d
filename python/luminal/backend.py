"""The torch.compile backend: `torch.compile(model, backend="luminal")`."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Callable

import torch
import torch.fx
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from . import _C
from .compiled_model import BoundProgram, CompiledModel
from .errors import UnsupportedError, UserError
from .export import export_graph, is_dtensor, own_copy, quiet_torch_internals, specialise_scalar_inputs
from .export_cache import cached_export
from .input_device_moves import lift_input_device_moves
from .options import check_runtime, core_options, validate_options
from .subclass_weights import plain_weights
from .training import TrainingModel, needs_autograd

log = logging.getLogger("luminal")

# torch.compile passes `mode` through to non-inductor backends; we have one mode today.
SUPPORTED_MODES = (None, "default")

Backend = Callable[..., "CompiledModel | TrainingModel"]


def _inputs_device(example_inputs: list[Any]) -> torch.device:
    """The device the graph runs on: a GPU if any input tensor is on one (a graph may copy a CPU
    input there itself, see input_device_moves.py), else the first tensor's, else the CPU. Under
    dynamic=True dynamo may put SymInts first: only tensors count."""
    tensors = [value for value in example_inputs if isinstance(value, torch.Tensor)]
    for tensor in tensors:
        if tensor.device.type == "cuda":
            return tensor.device
    return tensors[0].device if tensors else torch.device("cpu")


def default_factory(example_inputs: list[Any], runtime: str | None = None) -> Any:
    """The runtime factory capsule for the inputs' device. Never falls back to another device."""
    device = _inputs_device(example_inputs)
    check_runtime(runtime)
    if device.type == "cpu":
        return _C.reference_factory_capsule() if runtime == "reference" else _C.cpu_factory_capsule()
    if device.type == "cuda":
        if runtime is not None:
            raise UserError(
                f"options={{'runtime': {runtime!r}}} runs on the CPU, but the model's tensors are on CUDA; "
                "drop the option, or move the model and inputs to the CPU"
            )
        if not _C.has_cuda:
            raise UserError(
                "the model's tensors are on CUDA but this luminal build has no CUDA runtime "
                "(it was built without -DLUMINAL_CUDA=ON); rebuild with the CUDA toolkit or run on the CPU"
            )
        return _C.cuda_factory_capsule()
    available = "cpu, cuda" if _C.has_cuda else "cpu"
    raise UserError(f"luminal has no runtime for device {device.type!r}; available: {available}")


def log_fallbacks(stats: dict[str, Any]) -> None:
    """Says once per compile which ops run through the ATen fallback: they are correct but
    unfused, and each is a partition boundary, so users should know where their speed goes."""
    if stats["fallback_ops"]:
        log.warning(
            "luminal runs %d op(s) through the ATen fallback (no native translation yet): %s; "
            "options={'fallback': 'error'} makes this an error",
            len(stats["fallback_ops"]),
            ", ".join(stats["fallback_ops"]),
        )


def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], factory: Any, options: dict[str, Any]
) -> CompiledModel | TrainingModel:
    """What the backend returns for `gm`: a TrainingModel when autograd must see through it (see
    training.py), else a CompiledModel that exports `gm` and compiles it on its first call."""
    if needs_autograd(example_inputs):
        return TrainingModel(gm, example_inputs, factory, options)
    # Now, inside dynamo's frame, so that dynamo guards on the Python scalars we specialise.
    scalar_values = specialise_scalar_inputs(gm)
    # Dynamo may reuse or edit its graph after we return: work on our own copy.
    graph = own_copy(gm)
    # CPU inputs the graph copies to the GPU itself: each call copies them before the program.
    input_moves = lift_input_device_moves(graph)

    def compile_on_first_call(args: tuple) -> BoundProgram:
        start = time.perf_counter()
        with quiet_torch_internals(), traced_outside_inference_mode(args):
            exported, export_cache_hit = cached_export(
                export_graph, graph, list(args), scalar_values, options.get("cache_dir")
            )
        export_ms = (time.perf_counter() - start) * 1000
        program = _C.compile_pt2(
            exported.archive, factory, core_options(options), plain_weights(exported.weights)
        )
        bound = BoundProgram(
            program,
            exported.user_input_positions,
            exported.weight_positions,
            exported.weights,
            {"export_ms": export_ms, "export_cache_hit": export_cache_hit, "archive_bytes": len(exported.archive)},
            frozenset(exported.size_carrier_positions),
            exported.python_outputs,
            exported.item_outputs,
            exported.attribute_weights,
            frozenset(p for p in exported.weight_positions if is_dtensor(args[p])),
        )
        stats = program.stats
        log_fallbacks(stats)
        log.info(
            "luminal compiled %d aten nodes into %d IR nodes in %.0f ms (export %.0f ms)",
            stats["aten_node_count"],
            stats["ir_node_count"],
            (time.perf_counter() - start) * 1000,
            export_ms,
        )
        return bound

    return CompiledModel(compile_on_first_call, input_moves)


@contextlib.contextmanager
def traced_outside_inference_mode(args: tuple):
    """Export traces a graph that reads tensor subclasses (torchao's quantized weights) outside
    torch.inference_mode(), grad still off as on the inference path: under it every tensor the
    trace makes is an inference tensor, whose version counter the subclasses' views cannot share,
    and every such export failed ("Cannot set version_counter for inference tensor"). A tensor
    made under inference_mode that such a graph updates is traced as a stand-in where it is an
    input (a KV cache: export._internalise); module state made there (a buffer the model updates)
    cannot be, and is an error saying what to do. Other graphs (DTensor shards' too) are traced
    where they were called."""
    subclasses = any(is_traceable_wrapper_subclass(a) and not is_dtensor(a) for a in args)
    if not torch.is_inference_mode_enabled() or not subclasses:
        yield
        return
    try:
        with torch.inference_mode(False), torch.no_grad():
            yield
    except UnsupportedError as error:
        if "inference tensor" not in str(error):
            raise
        raise UnsupportedError(
            "the model was called under torch.inference_mode() and reads tensor subclasses (torchao's quantized "
            "weights), which torch.export cannot trace there; traced outside it, the graph cannot update module state "
            "made under inference_mode (a buffer the model updates): build the model outside torch.inference_mode() "
            f"and call it under torch.inference_mode() or torch.no_grad() ({error})"
        ) from error


def register_backend(factory_capsule: Any) -> Backend:
    """A torch.compile backend bound to this runtime factory capsule ('luminal.runtime_factory')."""
    _C.factory_info(factory_capsule)  # validates name and ABI version now, not at first compile

    def backend(
        gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict | None = None, mode: str | None = None
    ) -> CompiledModel | TrainingModel:
        _check_mode(mode)
        return compile_graph(gm, example_inputs, factory_capsule, validate_options(options))

    return backend


def luminal_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict | None = None, mode: str | None = None
) -> CompiledModel | TrainingModel:
    """The default luminal backend: picks the runtime from the inputs' device."""
    _check_mode(mode)
    options = validate_options(options)
    factory = default_factory(example_inputs, options.get("runtime"))
    return compile_graph(gm, example_inputs, factory, options)


def _check_mode(mode: str | None) -> None:
    if mode not in SUPPORTED_MODES:
        raise UserError(f"luminal does not support mode={mode!r}; use options={{...}} instead (see docs/options.md)")
