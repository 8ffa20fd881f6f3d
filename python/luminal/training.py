"""Training: the backend's path when autograd has to flow through the compiled graph.

With grad mode on and a parameter or input that requires grad, dynamo's graph goes through
AOTAutograd, as inductor's does: it traces the joint forward and backward graph with luminal's
decompositions, the min-cut partitioner splits it into a forward that saves what the backward
needs (recomputing cheap elementwise work instead of saving it) and a backward, and each is
compiled by the C++ core like an inference graph. AOTAutograd's autograd.Function then gives
the outputs their grad_fn, and backward() runs the compiled backward. Under no_grad or
inference_mode, or with nothing requiring grad, the backend takes the inference path instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch import config as functorch_config
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import _C
from .aten_graph import export_aten_graph
from .compiled_model import BoundProgram, CompiledModel
from .decompositions import decomposition_table
from .errors import LuminalError
from .options import core_options
from .subclass_weights import plain_weights

log = logging.getLogger("luminal")


def needs_autograd(example_inputs: list[Any]) -> bool:
    """Whether autograd must see through the graph: the rule dynamo's callers expect (inductor's)."""
    return torch.is_grad_enabled() and any(
        isinstance(v, torch.Tensor) and v.requires_grad for v in example_inputs
    )


def compile_part(
    graph: torch.fx.GraphModule, part: str, factory: Any, options: dict[str, Any]
) -> CompiledModel:
    """One of AOTAutograd's graphs ('forward' or 'backward') compiled by the C++ core, now."""
    start = time.perf_counter()
    try:
        exported = export_aten_graph(graph)
        export_ms = (time.perf_counter() - start) * 1000
        program = _C.compile_pt2(
            exported.archive, factory, core_options(options), plain_weights(exported.weights)
        )
    except LuminalError as error:
        # Which of the two graphs: a node of the backward is no line the user wrote.
        raise type(error)(f"in the {part} graph AOTAutograd derived: {error}") from error
    stats = program.stats
    if stats["fallback_ops"]:
        log.warning(
            "luminal runs %d op(s) of the %s graph through the ATen fallback (no native translation yet): %s; "
            "options={'fallback': 'error'} makes this an error",
            len(stats["fallback_ops"]),
            part,
            ", ".join(stats["fallback_ops"]),
        )
    log.info(
        "luminal compiled the %s graph: %d aten nodes into %d IR nodes in %.0f ms",
        part,
        stats["aten_node_count"],
        stats["ir_node_count"],
        (time.perf_counter() - start) * 1000,
    )
    bound = BoundProgram(
        program,
        exported.user_input_positions,
        {},
        exported.weights,
        {"export_ms": export_ms, "archive_bytes": len(exported.archive)},
        python_outputs=exported.python_outputs,
    )
    return CompiledModel.of(bound)


class TrainingModel:
    """What the backend returns for a graph autograd must see through: AOTAutograd's callable,
    whose forward and backward are luminal's compiled graphs (`forward` and `backward`, the
    latter compiled when AOTAutograd asks for it)."""

    def __init__(
        self, gm: torch.fx.GraphModule, example_inputs: list[Any], factory: Any, options: dict[str, Any]
    ):
        self.forward: CompiledModel | None = None
        self.backward: CompiledModel | None = None

        def compiler(part: str) -> Callable[[torch.fx.GraphModule, list[Any]], Callable]:
            def compile_graph(graph: torch.fx.GraphModule, _fake_inputs: list[Any]) -> Callable:
                # AOTAutograd calls its compilers under its fake mode: the archive's stand-in
                # tensors must be real.
                with unset_fake_temporarily():
                    compiled = compile_part(graph, part, factory, options)
                setattr(self, part, compiled)

                def run(args: list[Any]) -> list[Any]:
                    return compiled(*args)

                run._boxed_call = True  # AOTAutograd passes the arguments as one list
                return run

            return compile_graph

        # Attention is traced as its math (matmuls around a softmax), whose backward AOTAutograd
        # derives op by op: the fused CPU kernels' backward op is a single aten call the core
        # would have to run through ATen, and under autocast AOTAutograd hands it inputs of
        # mixed dtypes that its own kernel rejects ("expected scalar type Float but found
        # BFloat16", Llama with bf16 autocast).
        # The backward is compiled now, beside the forward, not lazily at the first backward():
        # an op luminal cannot run is then an error of torch.compile's first call, and the
        # first backward() costs no compile.
        with sdpa_kernel(SDPBackend.MATH), functorch_config.patch(force_non_lazy_backward_lowering=True):
            # Dynamo's own wrapper of AOTAutograd, as every AOTAutograd backend uses: it keeps
            # dynamo from tracing the compilers and the compiled graphs, and counts the call,
            # which DDP's graph splitter (DDPOptimizer) reads to consume AOTAutograd's first,
            # fake-tensor call itself; without it a real first call returned fake tensors.
            self._run = aot_autograd(
                fw_compiler=compiler("forward"),
                bw_compiler=compiler("backward"),
                partition_fn=min_cut_rematerialization_partition,
                decompositions=decomposition_table(),
            )(gm, example_inputs)

    def __call__(self, *args: Any) -> Any:
        return self._run(*args)

    @property
    def stats(self) -> dict[str, Any]:
        """The forward's and the backward's stats (CompiledModel.stats), and every op either
        runs through the ATen fallback."""
        parts = {part: getattr(self, part).stats for part in ("forward", "backward") if getattr(self, part)}
        fallback_ops = sorted({op for stats in parts.values() for op in stats["fallback_ops"]})
        return {**parts, "fallback_ops": fallback_ops}
