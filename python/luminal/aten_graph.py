"""From an aten-level FX graph (AOTAutograd's forward or backward graph) to a PT2 archive.

AOTAutograd hands its compilers graphs that are already functional and decomposed (with
luminal's table), every node carrying its fake value in `node.meta["val"]`. torch.export has
nothing left to do there, and re-tracing one fails anyway: inside the autograd.Function that
runs the forward, export meets AOTAutograd's functional tensors. So the ExportedProgram is built
around the graph as it is: every placeholder a user input, every constant a lifted tensor
constant bound by pointer, every tensor output a user output.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch.export.exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    SymIntArgument,
    TensorArgument,
)

from .errors import UnsupportedError
from .export import ExportedGraph, PythonOutputs, argument_program, attribute_tensor, own_copy, serialize

aten = torch.ops.aten

# Ops that only make a view of their input: an output that is such a view of a placeholder (a
# weight transposed for the backward) is made from the caller's tensor in Python, as the view
# it is, instead of being copied by the core on every call.
VIEW_OPS = frozenset(
    {
        aten.alias.default,
        aten.view.default,
        aten._unsafe_view.default,
        aten.permute.default,
        aten.t.default,
        aten.transpose.int,
        aten.expand.default,
        aten.slice.Tensor,
        aten.select.int,
        aten.unsqueeze.default,
        aten.squeeze.dim,
        aten.squeeze.dims,
        aten.squeeze.default,
    }
)

# Node metadata the serializer reads: the fake value, and the stack trace that error messages quote.
KEPT_METADATA = ("val", "stack_trace")


def _value(node: torch.fx.Node) -> Any:
    return node.meta.get("val")


def _is_view_or_size(node: torch.fx.Node) -> bool:
    """A view op, or SymInt arithmetic and size queries."""
    return node.target in VIEW_OPS or not isinstance(_value(node), torch.Tensor)


def _split_python_outputs(gm: torch.fx.GraphModule) -> PythonOutputs | None:
    """Takes out of gm the outputs the core need not compute: None gradients, placeholders
    returned as they are, views of placeholders and symbolic ints."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    values = list(output.args[0])
    positions, roots, kept = [], [], []
    for position, value in enumerate(values):
        if value is None or argument_program(gm, [value], _is_view_or_size) is not None:
            positions.append(position)
            roots.append(value)
        else:
            kept.append(value)
    if not positions:
        return None
    program = argument_program(gm, roots, _is_view_or_size)
    output.args = (tuple(kept),)
    # What only the removed outputs read: their views and size arithmetic.
    for node in reversed(list(gm.graph.nodes)):
        if node.op == "call_function" and not node.users and _is_view_or_size(node):
            gm.graph.erase_node(node)
    return PythonOutputs(positions, program)


def _lift_constants(gm: torch.fx.GraphModule) -> dict[str, torch.Tensor]:
    """Turns each get_attr of a tensor (a constant the model built, `torch.tensor(...)`) into a
    placeholder ahead of the others, as export lifts constants; returns them by name."""
    constants: dict[str, torch.Tensor] = {}
    first = next((n for n in gm.graph.nodes if n.op == "placeholder"), None)
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        value = attribute_tensor(gm, str(node.target))
        if not isinstance(value, torch.Tensor):
            raise UnsupportedError(
                f"the graph reads {node.target!r}, a {type(value).__name__}; luminal takes tensor constants only"
            )
        name = f"lifted_{node.name}"
        if first is not None:
            with gm.graph.inserting_before(first):
                placeholder = gm.graph.placeholder(name)
        else:
            with gm.graph.inserting_before(node):
                placeholder = gm.graph.placeholder(name)
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        gm.graph.erase_node(node)
        constants[name] = value.detach()
    return constants


def _unread_layout_symbols(placeholders: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """A SymInt placeholder stays a symbolic input: the core reads its value from the program's
    sym_int_values, an expression over the symbols of the tensor inputs' sizes, which it binds
    per call. So each of its symbols must be one tensor input's dim, unless nothing reads it:
    dynamo lifts the symbols of a dynamic input's strides and storage offset (a sliced input)
    as inputs too, and the runtime takes each call's strides from the tensors themselves. Those
    unread placeholders are returned, to be dropped; a read one that is no size is an error."""
    bound = set()
    for node in placeholders:
        value = _value(node)
        if isinstance(value, torch.Tensor):
            bound.update(
                s.node.expr for s in value.shape if isinstance(s, torch.SymInt) and s.node.expr.is_symbol
            )
    unread = set()
    for node in placeholders:
        value = _value(node)
        if isinstance(value, torch.Tensor):
            continue
        if not isinstance(value, torch.SymInt):
            raise UnsupportedError(
                f"graph input {node.name!r} is a {type(value).__name__}; luminal takes tensors and symbolic sizes"
            )
        unbound = value.node.expr.free_symbols - bound
        if unbound and not node.users:
            unread.add(node)
        elif unbound:
            raise UnsupportedError(
                f"graph input {node.name!r} is the symbolic size {value.node.expr}, but "
                f"{', '.join(sorted(map(str, unbound)))} is no tensor input's size; compile with dynamic=False"
            )
    return unread


def _argument(node: torch.fx.Node) -> TensorArgument | SymIntArgument:
    return TensorArgument(node.name) if isinstance(_value(node), torch.Tensor) else SymIntArgument(node.name)


def export_aten_graph(graph: torch.fx.GraphModule) -> ExportedGraph:
    """The archive of an aten-level graph whose every placeholder is a call argument (tensors
    and SymInts, in order; SymInts nothing reads are left out); its tensor constants are bound
    by pointer. Does not edit `graph`."""
    gm = own_copy(graph)
    for node in gm.graph.nodes:
        node.meta = {key: node.meta[key] for key in KEPT_METADATA if key in node.meta}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    tensor_positions = [p for p, n in enumerate(placeholders) if isinstance(_value(n), torch.Tensor)]
    # First: a SymInt the graph only returns (saved for the backward) is a Python output.
    python_outputs = _split_python_outputs(gm)
    unread = _unread_layout_symbols(placeholders)
    for node in unread:
        gm.graph.erase_node(node)
    call_arguments = [n for n in placeholders if n not in unread]
    constants = _lift_constants(gm)
    gm.recompile()

    input_specs = [InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(name), name) for name in constants]
    input_specs += [InputSpec(InputKind.USER_INPUT, _argument(n), None) for n in call_arguments]
    results = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT, _argument(n), None) for n in results]
    call_spec = ModuleCallSignature(
        inputs=[],
        outputs=[],
        in_spec=pytree.tree_flatten((tuple(range(len(call_arguments))), {}))[1],
        out_spec=pytree.tree_flatten(tuple(range(len(results))))[1],
    )
    program = ExportedProgram(
        root=gm,
        graph=gm.graph,
        graph_signature=ExportGraphSignature(input_specs, output_specs),
        state_dict={},
        range_constraints={},
        module_call_graph=[ModuleCallEntry("", call_spec)],
        constants=dict(constants),
    )
    return ExportedGraph(
        archive=serialize(program, set(constants)),
        user_input_positions=tensor_positions,
        weight_positions={},
        weights=constants,
        python_outputs=python_outputs,
    )
