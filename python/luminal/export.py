"""From the FX graph dynamo hands a backend to an in-memory PT2 archive for the C++ core.

Dynamo lifts parameters and buffers into graph inputs. We put them back into the module
(re-internalise) so that export records them as parameters/buffers, and pass the caller's own
tensors to the core by pointer: weights are never copied into the archive.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import linecache
import operator
import os
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .decompositions import decomposition_table
from .errors import UnsupportedError, UserError
from .subclass_weights import plain_weights


@dataclass
class PythonOutputs:
    """Graph outputs the core does not compute, and one small FX program that computes them all
    from the call's arguments: symbolic ints (a StaticSlidingWindowLayer's Python-int length
    after `+= 1`; the core returns tensors only), and in AOTAutograd's graphs the None gradients,
    the inputs returned as they are and the views of inputs saved for the backward (returned by
    the core, each would be a copy of a weight). The compiled callable inserts them in place."""

    positions: list[int]  # ascending positions among the graph's outputs
    program: torch.fx.GraphModule  # (*call arguments) -> a tuple, one value per position


@dataclass
class ExportedGraph:
    archive: bytes
    # Placeholder position -> how the compiled callable gets it on each call.
    user_input_positions: list[int]
    weight_positions: dict[int, str]  # position -> FQN in the exported program
    # FQN -> the caller's tensor, bound by pointer (a tensor subclass through its inner tensors:
    # subclass_weights.py).
    weights: dict[str, torch.Tensor]
    symint_positions: list[int] = field(default_factory=list)  # derived from tensor shapes
    # SymInt inputs that are no tensor's size (a StaticSlidingWindowLayer's Python-int length):
    # each call passes them as the dim 0 of an empty [value, 0] tensor, so the core binds the
    # symbol from an input shape like any other. Also listed in user_input_positions.
    size_carrier_positions: list[int] = field(default_factory=list)
    # Graph outputs the core does not compute (symbolic ints, ...): see PythonOutputs.
    python_outputs: PythonOutputs | None = None
    # Positions, among the core's outputs, of symbolic numbers read from tensor data (`.item()`, a
    # nonzero's row count): the core returns each as a 0-d tensor, the callable as a number.
    item_outputs: list[int] = field(default_factory=list)
    # Tensors the graph reads as attributes (get_attr): an optimizer's parameters and state, a
    # constant the model built. Bound by pointer like lifted weights (in `weights`, by this name,
    # which export keeps as their FQN): updated in place, they must never be copied into the
    # archive, where the update would be lost.
    attribute_weights: list[str] = field(default_factory=list)


@contextlib.contextmanager
def quiet_torch_internals():
    """torch's pytree specs warn about their own deprecated isinstance check when deep-copied,
    which export and our graph copy both do: noise for the user, nothing they can act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield


def _is_module_state(value: Any) -> bool:
    """Parameters, buffers and static-address tensors (a StaticCache's K/V) that dynamo lifted."""
    if isinstance(value, torch.nn.Parameter):
        return True
    return isinstance(value, torch.Tensor) and getattr(value, "_dynamo_static_input_type", None) is not None


def _module_attribute_source(node: torch.fx.Node) -> bool | None:
    """Whether dynamo found this input in a module's _parameters/_buffers; None when unknown."""
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    if source is None:
        return None
    from torch._dynamo import source as sources

    while source is not None:
        if isinstance(source, (sources.ParamBufferSource, sources.UnspecializedParamBufferSource)):
            return True
        if isinstance(source, sources.AttrSource) and source.member in ("_parameters", "_buffers"):
            return True
        source = getattr(source, "base", None)
    return False


def _is_weight(node: torch.fx.Node, value: Any) -> bool:
    """Module state bound once by pointer. A static-address tensor reached through something
    other than a module (a StaticCache's keys/values/cumulative_length) is per-call state: it
    stays a user input, so each call reads and updates the cache it was given (two caches in two
    threads never share a binding) and the runtime never treats mutable state as a constant."""
    if not _is_module_state(value):
        return False
    return isinstance(value, torch.nn.Parameter) or _module_attribute_source(node) is not False


def _is_sym_scalar(value: Any) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


@functools.cache
def _dtensor_class() -> type | None:
    if not torch.distributed.is_available():
        return None
    from torch.distributed.tensor import DTensor

    return DTensor


def is_dtensor(value: Any) -> bool:
    """A torch.distributed DTensor (a tensor-parallel model's sharded parameter)."""
    cls = _dtensor_class()
    return cls is not None and isinstance(value, cls)


def holds_distributed_state(args: list[Any]) -> bool:
    """Whether a graph's inputs include a DTensor or an object that is no tensor or number (a
    DeviceMesh, a process group): a tensor-parallel model's graph."""
    plain = (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)
    return any(is_dtensor(a) or not isinstance(a, plain) for a in args)


def _register_state(gm: torch.fx.GraphModule, node: torch.fx.Node, name: str, value: torch.Tensor) -> torch.fx.Node:
    """`value` registered on gm as parameter or buffer `name`, and a get_attr of it before `node`."""
    if isinstance(value, torch.nn.Parameter):
        gm.register_parameter(name, value)
    else:
        gm.register_buffer(name, value)
    with gm.graph.inserting_before(node):
        return gm.graph.get_attr(name)


def _bind_constant(gm: torch.fx.GraphModule, node: torch.fx.Node, name: str, value: Any) -> torch.fx.Node:
    """A get_attr of `value`, stored on gm as `name`, before `node`."""
    setattr(gm, name, value)
    with gm.graph.inserting_before(node), warnings.catch_warnings():
        # FX expects get_attr to read a module, parameter or buffer; a constant object is fine
        # for export, which reads it while it traces.
        warnings.filterwarnings("ignore", message="Attempted to insert a get_attr Node")
        return gm.graph.get_attr(name)


def _bind_opaque(gm: torch.fx.GraphModule, node: torch.fx.Node, value: Any) -> None:
    """A non-tensor graph input (a DeviceMesh or process group a tensor-parallel model closes
    over) becomes a constant of the graph: export traces through it and the archive holds what
    it resolved to (a process group's name). Dynamo guards on the object, so a call with another
    one compiles again."""
    attr = _bind_constant(gm, node, f"_opaque_{node.name}", value)
    node.replace_all_uses_with(attr)
    gm.graph.erase_node(node)


def _dtensor_weight(gm: torch.fx.GraphModule, node: torch.fx.Node, name: str, value: Any) -> torch.nn.Parameter | torch.Tensor:
    """A sharded parameter: its local shard is the weight bound by pointer, and the graph
    rebuilds the DTensor from it (from_local with the parameter's mesh, placements and global
    shape), so export traces the redistributions it takes part in into functional collectives."""
    local = value.to_local()
    shard = torch.nn.Parameter(local, requires_grad=False) if isinstance(value, torch.nn.Parameter) else local
    attr = _register_state(gm, node, name, shard)
    mesh = _bind_constant(gm, node, f"{name}_mesh", value.device_mesh)
    with gm.graph.inserting_before(node):
        rebuilt = gm.graph.call_function(
            _dtensor_class().from_local,
            (attr, mesh, tuple(value.placements)),
            {"run_check": False, "shape": tuple(value.shape), "stride": tuple(value.stride())},
        )
    rebuilt.meta = dict(node.meta)
    node.replace_all_uses_with(rebuilt)
    gm.graph.erase_node(node)
    return shard


# Set on a placeholder whose every use was replaced by its specialised value: it is no input.
SPECIALISED = "luminal_specialised_scalar"


def _is_unspecialised_scalar(node: torch.fx.Node) -> bool:
    """A Python float (an RMSNorm's eps, an attention's scaling) that dynamo did not specialise
    (dynamic=True, or a value that changed between calls): it passes it as a 0-d f64 tensor
    input and reads it back with `.item()`."""
    return node.op == "placeholder" and bool(getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False))


def own_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm`'s graph that export can edit, over the same attributes: the tensors the
    graph reads (an optimizer's parameters and state) stay the caller's, bound by pointer, never
    copied (a deep copy doubled an optimizer's memory and bound the copies). The new module's
    forward keeps the placeholder names (l_input_ids_, ...), which input errors quote."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


def attribute_tensor(gm: torch.fx.GraphModule, target: str) -> Any:
    """The attribute a get_attr node reads."""
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def specialise_scalar_inputs(gm: torch.fx.GraphModule) -> dict[str, float | int | bool]:
    """The value of every `.item()` of an unspecialised Python scalar input, by node name.

    Call it inside dynamo's frame (in the backend, not lazily): reading a symbolic value adds
    a guard on it to dynamo's ShapeEnv, so a model whose eps or scaling later changes recompiles
    instead of running with the old constant. Export cannot keep these as inputs: each `.item()`
    becomes an unbacked float, and scaled_dot_product_attention's `scale` guards on it (the
    "Could not guard on data-dependent expression zuf" error of Llama under dynamic=True); the
    core's scalars are constants too. Does not edit gm."""
    values: dict[str, float | int | bool] = {}
    for node in gm.graph.nodes:
        if not _is_unspecialised_scalar(node):
            continue
        for user in node.users:
            value = user.meta.get("example_value")
            if user.op != "call_method" or user.target != "item" or not _has_value(value):
                continue
            if isinstance(value, (torch.SymFloat, float)):
                values[user.name] = float(value)
            elif isinstance(value, (torch.SymBool, bool)):
                values[user.name] = bool(value)
            elif isinstance(value, (torch.SymInt, int)):
                values[user.name] = int(value)
    return values


def _has_value(value: Any) -> bool:
    """A plain scalar, or a symbolic one backed by the value dynamo saw (unbacked ones, from
    tensor data, are left as they are: no guard can pin them)."""
    if isinstance(value, (float, int, bool)):
        return True
    return _is_sym_scalar(value) and value.node.has_hint()


def _apply_scalar_values(gm: torch.fx.GraphModule, values: dict[str, float | int | bool]) -> None:
    """Replaces each specialised `.item()` by its value; marks scalar inputs left unused."""
    if not values:
        return
    for node in list(gm.graph.nodes):
        if node.name not in values or node.op != "call_method" or node.target != "item":
            continue
        value = values[node.name]
        for user in list(node.users):
            user.args = torch.fx.node.map_arg(user.args, lambda n: value if n is node else n)
            user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda n: value if n is node else n)
        gm.graph.erase_node(node)
    for node in gm.graph.nodes:
        if _is_unspecialised_scalar(node) and not node.users:
            node.meta[SPECIALISED] = True
    gm.recompile()


SIZE_CARRIER = "luminal_size_carrier"


# A carrier's dim 0 is the value plus this: export specialises a dim whose example size is 0 or 1,
# and a symbolic int (a sliding-window cache's Python length) often starts there.
CARRIER_OFFSET = 2


def size_carrier(value: Any) -> torch.Tensor:
    """The empty tensor whose dim 0 carries a symbolic int input's value (no bytes)."""
    return torch.empty((int(value) + CARRIER_OFFSET, 0))


def _find_size_source(symbol: torch.SymInt, tensor_placeholders: list[torch.fx.Node]) -> tuple[torch.fx.Node, int] | None:
    """A (tensor placeholder, dim) whose size is exactly this symbol."""
    target = symbol.node.expr
    for node in tensor_placeholders:
        fake = node.meta.get("example_value")
        for dim, size in enumerate(getattr(fake, "shape", ())):
            if isinstance(size, torch.SymInt) and size.node.expr == target:
                return node, dim
    if isinstance(symbol, torch.SymInt):
        return None
    raise UnsupportedError(
        f"symbolic input {symbol} is not the size of any tensor input; luminal binds symbolic dims from "
        "input shapes. Compile with dynamic=False or mark the value static."
    )


def _internalise(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> tuple[ExportedGraph, list[Any]]:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise UserError(f"graph has {len(placeholders)} placeholders but {len(example_inputs)} example inputs")
    result = ExportedGraph(b"", [], {}, {})
    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(attribute_tensor(gm, str(node.target)), torch.Tensor):
            result.attribute_weights.append(str(node.target))
            result.weights[str(node.target)] = attribute_tensor(gm, str(node.target))
    user_inputs: list[Any] = []
    tensor_placeholders = [
        n
        for n, v in zip(placeholders, example_inputs)
        if isinstance(v, torch.Tensor) and not _is_weight(n, v) and not n.meta.get(SPECIALISED)
    ]
    for position, (node, value) in enumerate(zip(placeholders, example_inputs)):
        if node.meta.get(SPECIALISED):
            gm.graph.erase_node(node)  # its value is in the graph; dynamo guards on it
        elif _is_weight(node, value) and is_dtensor(value):
            result.weight_positions[position] = node.name
            result.weights[node.name] = _dtensor_weight(gm, node, node.name, value)
        elif _is_weight(node, value):
            name = node.name
            attr = _register_state(gm, node, name, value)
            attr.meta = dict(node.meta)
            node.replace_all_uses_with(attr)
            gm.graph.erase_node(node)
            result.weight_positions[position] = name
            result.weights[name] = value
        elif _is_sym_scalar(node.meta.get("example_value", value)):
            found = _find_size_source(node.meta.get("example_value", value), tensor_placeholders)
            if found is None and not node.users:
                # A symbol of a dynamic input's strides or storage offset (a sliced input), which
                # dynamo lifts as an input: nothing reads it, and the runtime takes each call's
                # strides from the tensors themselves.
                gm.graph.erase_node(node)
                continue
            if found is None:
                with gm.graph.inserting_before(node):
                    carrier = gm.graph.placeholder(f"{node.name}_size")
                carrier.meta[SIZE_CARRIER] = True
                found = (carrier, 0)
                result.user_input_positions.append(position)
                result.size_carrier_positions.append(position)
                user_inputs.append(size_carrier(value))
            source, dim = found
            with gm.graph.inserting_after(source):
                size = gm.graph.call_function(torch.ops.aten.sym_size.int, (source, dim))
            if source.meta.get(SIZE_CARRIER):
                with gm.graph.inserting_after(size):
                    size = gm.graph.call_function(operator.sub, (size, CARRIER_OFFSET))
            size.meta = dict(node.meta)
            node.replace_all_uses_with(size)
            gm.graph.erase_node(node)
            result.symint_positions.append(position)
        elif is_dtensor(value):
            raise UnsupportedError(
                f"graph input {node.name!r} is a DTensor that is not a parameter or buffer of the model; "
                "luminal binds sharded weights, and takes activations as local tensors (DTensor.to_local())"
            )
        elif isinstance(value, torch.Tensor):
            result.user_input_positions.append(position)
            # Export traces a stand-in (empty_like, no data copied) where the input itself cannot
            # be traced: a non-contiguous input as a contiguous one of the same shape, since the
            # runtimes take each call's strides from the tensors themselves and torch.export
            # (2.13) fails to run its own guards on a sliced input with a dynamic dim ('NoneType'
            # object has no attribute 'size'); a tensor made under inference_mode (a KV cache)
            # traced outside it (backend.traced_outside_inference_mode), where its trace could not
            # record an update to it, while the runtime writes the caller's tensor either way.
            traced_as_is = value.is_contiguous() and (torch.is_inference_mode_enabled() or not value.is_inference())
            user_inputs.append(
                value if traced_as_is else torch.empty_like(value, memory_format=torch.contiguous_format)
            )
        else:
            _bind_opaque(gm, node, value)
    gm.graph.lint()
    gm.recompile()
    return result, user_inputs


def argument_program(
    gm: torch.fx.GraphModule, roots: list[torch.fx.Node | None], is_free: Callable[[torch.fx.Node], bool]
) -> torch.fx.GraphModule | None:
    """A graph over all of gm's placeholders that computes `roots` (None stays None): only the
    placeholders and the nodes `is_free` accepts, which the roots need. None when a root needs
    another node (a tensor computation, a `.item()`)."""
    needed: set[torch.fx.Node] = set()
    stack = [root for root in roots if root is not None]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        if node.op == "placeholder":
            continue
        if node.op != "call_function" or not is_free(node):
            return None
        stack.extend(node.all_input_nodes)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(node.name)
        elif node in needed:
            env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[root] if root is not None else None for root in roots))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _is_sym_arithmetic(node: torch.fx.Node) -> bool:
    """SymInt arithmetic and size queries in a dynamo graph: never a tensor op or a mutation."""
    return not isinstance(node.meta.get("example_value"), torch.Tensor)


_ITEM_DTYPES = {torch.SymInt: torch.int64, torch.SymFloat: torch.float64, torch.SymBool: torch.bool}


def _split_sym_outputs(gm: torch.fx.GraphModule) -> tuple[PythonOutputs | None, list[int]]:
    """Removes the symbolic-int outputs that follow from the inputs' sizes from gm (export and the
    core take tensors) and returns how to compute them from the call's arguments. A symbolic
    number read from tensor data has no such program: it stays an output of gm as a 0-d tensor,
    whose position among the remaining outputs is returned second."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    values = output.args[0]
    if not isinstance(values, (tuple, list)):
        return None, []
    positions, roots, kept, items = [], [], [], []
    for position, value in enumerate(values):
        example = value.meta.get("example_value") if isinstance(value, torch.fx.Node) else None
        if not _is_sym_scalar(example):
            kept.append(value)
            continue
        if argument_program(gm, [value], _is_sym_arithmetic) is not None:
            positions.append(position)
            roots.append(value)
            continue
        with gm.graph.inserting_before(output):
            as_tensor = gm.graph.call_function(
                torch.ops.aten.scalar_tensor.default, (value,), {"dtype": _ITEM_DTYPES[type(example)]}
            )
        items.append(len(kept))
        kept.append(as_tensor)
    python_outputs = None
    if positions:
        python_outputs = PythonOutputs(positions, argument_program(gm, roots, _is_sym_arithmetic))
    if positions or items:
        output.args = (type(values)(kept),)
        # Drop the SymInt arithmetic nothing reads any more. Not eliminate_dead_code(): it also
        # drops dynamo's in-place method calls (cache.index_copy_), which have no users either.
        for node in reversed(list(gm.graph.nodes)):
            if node.op == "call_function" and not node.users and _is_sym_scalar(node.meta.get("example_value")):
                gm.graph.erase_node(node)
        gm.recompile()
    return python_outputs, items


ATTENTION_TARGETS = (
    torch._C._nn.scaled_dot_product_attention,
    torch.nn.functional.scaled_dot_product_attention,
    torch.ops.aten.scaled_dot_product_attention.default,
)


def _arg(node: torch.fx.Node, index: int, name: str) -> Any:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name)


def _check_attention_shapes(gm: torch.fx.GraphModule) -> None:
    """Before each scaled_dot_product_attention, `torch._check` that the keys, the values and
    the mask agree on the key length, so export gives them one symbol.

    Dynamo gives every dynamic dim of every input its own symbol (a DynamicCache's four K/V
    tensors: s53, s40, s66, s6), and SDPA's meta function never compares the key length of K
    with V's or the mask's, so export keeps them apart and the core's matmul verifier rejects
    `[.., s53 + 1] x [.., s40 + 1, 16]`. Eager SDPA fails on unequal lengths anyway: the check
    only states what the op already requires."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in ATTENTION_TARGETS:
            continue
        key, value, mask = _arg(node, 1, "key"), _arg(node, 2, "value"), _arg(node, 3, "attn_mask")
        pairs = [(key, -2, value, -2)]
        if isinstance(mask, torch.fx.Node):
            mask_shape = getattr(mask.meta.get("example_value"), "shape", ())
            # A length-1 last dim broadcasts over the keys: nothing to check.
            if len(mask_shape) and not (isinstance(mask_shape[-1], int) and mask_shape[-1] == 1):
                pairs.append((key, -2, mask, -1))
        with gm.graph.inserting_before(node):
            for a, a_dim, b, b_dim in pairs:
                if not isinstance(a, torch.fx.Node) or not isinstance(b, torch.fx.Node):
                    continue
                a_size = gm.graph.call_method("size", (a, a_dim))
                b_size = gm.graph.call_method("size", (b, b_dim))
                same = gm.graph.call_function(operator.eq, (a_size, b_size))
                gm.graph.call_function(torch._check, (same,))
                changed = True
    if changed:
        gm.recompile()


def _dynamic_shapes(gm: torch.fx.GraphModule) -> tuple[Any, ...] | None:
    """Dim.AUTO for every dim dynamo made symbolic, so one compile serves all its values: one
    spec per placeholder, grouped as export sees forward's parameters (named ones after
    own_copy(); a single *args tuple for a plainly deepcopied GraphModule)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    specs: list[dict[int, Any]] = []
    any_dynamic = False
    for node in placeholders:
        fake = node.meta.get("example_value")
        dims = {
            d: torch.export.Dim.AUTO for d, s in enumerate(getattr(fake, "shape", ())) if isinstance(s, torch.SymInt)
        }
        if node.meta.get(SIZE_CARRIER):
            dims = {0: torch.export.Dim.AUTO}
        any_dynamic |= bool(dims)
        specs.append(dims)
    if not any_dynamic:
        return None
    parameters = inspect.signature(gm.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return (tuple(specs),)
    return tuple(specs)


def _stand_in(tensor: torch.Tensor) -> torch.Tensor:
    """An empty tensor of the same dtype, so the archive carries the weight's metadata but no bytes."""
    empty = torch.empty(0, dtype=tensor.dtype)
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(empty, requires_grad=tensor.requires_grad)
    return empty


def _export_kwargs() -> dict[str, Any]:
    return {"strict": False}


@contextlib.contextmanager
def without_canonical_form_check():
    """torch.export.save canonicalises a deep copy of the serialised program only to check that a
    canonical form exists, and throws the copy away: half of the save's time for an LLM (about
    1 s of a cold compile of the memory-bound Llama). The archive's bytes are the same without
    it (tests/python/test_export.py checks this against the installed torch)."""
    from torch._export.serde import serialize as serde

    original = serde.canonicalize
    serde.canonicalize = lambda program, constants=None: program
    try:
        yield
    finally:
        serde.canonicalize = original


def serialize(ep: torch.export.ExportedProgram, externally_bound: set[str]) -> bytes:
    """The PT2 archive of `ep` in memory, without the payload of externally bound weights."""
    state = ep.state_dict
    saved = {name: state[name] for name in externally_bound if name in state}
    constants = {name: ep.constants[name] for name in externally_bound if name in ep.constants}
    try:
        for name, tensor in saved.items():
            state[name] = _stand_in(tensor)
        for name, tensor in constants.items():
            ep.constants[name] = torch.empty(0, dtype=tensor.dtype)
        buffer = io.BytesIO()
        with without_canonical_form_check():
            torch.export.save(ep, buffer)
    finally:
        state.update(saved)
        ep.constants.update(constants)
    return buffer.getvalue()


@contextlib.contextmanager
def _export_caches_released():
    """Drops what torch keeps of an export once it is done. torch.fx keeps the source of every
    GraphModule it generates (for tracebacks, in its loader and in linecache), and fake tensors
    cache each op's result metadata by shape, both for the life of the process: ~30 KiB per
    export, which a process compiling new shapes for hours would never get back. Export's
    GraphModules and fake tensors die with it, so their entries go too; entries made by anyone
    else (dynamo's own graph, which luminal keeps) are left alone."""
    loader = getattr(torch.fx.graph_module, "_loader", None)
    sources = getattr(loader, "eval_cache", None)
    fake_cache = getattr(torch._subclasses.fake_tensor.FakeTensorMode, "cache", None)
    sources_before = set(sources) if isinstance(sources, dict) else None
    fake_before = set(fake_cache) if isinstance(fake_cache, dict) else None
    try:
        yield
    finally:
        if sources_before is not None:
            for key in set(sources) - sources_before:
                del sources[key]
                linecache.cache.pop(key, None)
        if fake_before is not None:
            for key in set(fake_cache) - fake_before:
                del fake_cache[key]


def _export_error_origin(error: BaseException, args: list[Any]) -> str:
    """Where outside torch an export error was raised, for its message: a tensor subclass's own
    Python (torchao's quantized weights, traced through their __torch_dispatch__) fails under
    export in ways its message does not name. '' when torch raised it itself."""
    packages_dir = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep  # where torch is installed
    torch_dir = os.path.join(packages_dir, "torch") + os.sep
    luminal_dir = os.path.dirname(__file__) + os.sep
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith((torch_dir, luminal_dir)) and not frame.filename.startswith("<")
    ]
    if not frames:
        return ""
    where = frames[-1]
    path = where.filename.removeprefix(packages_dir)
    subclasses = sorted({type(a).__name__ for a in args if is_traceable_wrapper_subclass(a)})
    if not subclasses:
        return f" (raised in {path}:{where.lineno})"
    return (
        f" (raised in {path}:{where.lineno}, the Python of a tensor subclass the graph reads: "
        f"{', '.join(subclasses)}; torch.export traces that code, and this operation of it does not trace: "
        "keep those tensors plain there, e.g. quantize only the nn.Linear layers)"
    )


def export_graph(
    gm: torch.fx.GraphModule, args: list[Any], scalar_values: dict[str, float | int | bool] | None = None
) -> ExportedGraph:
    """Re-internalises lifted state, exports, decomposes to core ATen and serialises.

    `args` are real values for every placeholder (the first call's arguments); `gm` is edited.
    `scalar_values`: specialise_scalar_inputs() of the graph, taken inside dynamo's frame."""
    gm.eval()
    _apply_scalar_values(gm, scalar_values or {})
    python_outputs, item_outputs = _split_sym_outputs(gm)
    _check_attention_shapes(gm)
    traces_dtensors = holds_distributed_state(args)
    exported, user_inputs = _internalise(gm, args)
    exported.python_outputs = python_outputs
    exported.item_outputs = item_outputs
    dynamic_shapes = _dynamic_shapes(gm)
    with _export_caches_released():
        try:
            if traces_dtensors:
                # Below autograd (no pre-dispatch IR): a DTensor the graph builds dispatches to
                # its local ops and functional collectives as it is traced, where pre-dispatch
                # tracing would record DTensor's own autograd.Functions, whose arguments
                # (DTensorSpec) no graph can hold.
                ep = torch.export._trace._export(
                    gm, tuple(user_inputs), dynamic_shapes=dynamic_shapes, pre_dispatch=False, **_export_kwargs()
                )
            else:
                ep = torch.export.export(gm, tuple(user_inputs), dynamic_shapes=dynamic_shapes, **_export_kwargs())
            ep = ep.run_decompositions(decomposition_table())
        except Exception as error:  # export raises many types; surface them as one, with the cause
            origin = _export_error_origin(error, [*args, *exported.weights.values()])
            raise UnsupportedError(f"torch.export could not export the graph luminal was given{origin}: {error}") from error
        # An attribute export dropped (unread) needs no binding.
        targets = {spec.target for spec in ep.graph_signature.input_specs}

        def read_by_export(name: str) -> bool:
            return any(part in targets for part in plain_weights({name: exported.weights[name]}))

        exported.attribute_weights = [name for name in exported.attribute_weights if read_by_export(name)]
        exported.weights = {
            name: tensor
            for name, tensor in exported.weights.items()
            if read_by_export(name) or name in exported.weight_positions.values()
        }
        exported.archive = serialize(ep, set(plain_weights(exported.weights)))
        del ep
    return exported
