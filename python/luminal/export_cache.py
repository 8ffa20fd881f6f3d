"""An on-disk cache of exported graphs, so that a second process compiling the same model skips
torch.export and run_decompositions (seconds per graph; the C++ side then hits its own kernel
cache, and the warm compile is dynamo's tracing plus milliseconds).

An entry holds what export produced from the graph's structure: the weight-stripped PT2 archive
and how call arguments map onto it. Never weights: they are bound by pointer on every compile,
so a cached entry serves a model with other weights of the same shapes.

The key covers everything export reads: the graph's code, every placeholder's kind, dtype,
symbolic shape, strides and device, a tensor subclass's type and flattened attributes (torchao's
quantized weights trace differently by them: int8 weight-only and int8 dynamic activations are
one class), the values of constant tensors the graph holds, the Python scalars specialised into
it, and the versions of torch and of luminal's own export code. A
stale or unreadable entry is ignored and overwritten, never trusted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .export import ExportedGraph, attribute_tensor, holds_distributed_state

log = logging.getLogger("luminal")

# Bumped when the entry format changes.
FORMAT = 2
_EXPORT_SOURCES = ("export.py", "decompositions.py", "export_cache.py", "subclass_weights.py")


def default_cache_dir() -> Path:
    """The kernel cache's directory (the C++ runtime resolves it the same way)."""
    if os.environ.get("LUMINAL_CACHE_DIR"):
        return Path(os.environ["LUMINAL_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "luminal"
    return Path.home() / ".cache" / "luminal"


_code_digest: str | None = None


def _export_code_digest() -> str:
    """Hash of luminal's export code: an entry made by other code is never used."""
    global _code_digest
    if _code_digest is None:
        digest = hashlib.sha256()
        here = Path(__file__).resolve().parent
        for name in _EXPORT_SOURCES:
            digest.update((here / name).read_bytes())
        _code_digest = digest.hexdigest()
    return _code_digest


def _describe_value(node: torch.fx.Node, value: Any) -> str:
    """What export sees of one placeholder: its symbolic metadata, never its values."""
    fake = node.meta.get("example_value", value)
    if isinstance(value, torch.Tensor):
        shape = tuple(str(s) for s in getattr(fake, "shape", value.shape))
        strides = tuple(str(s) for s in fake.stride()) if isinstance(fake, torch.Tensor) else ()
        kind = "parameter" if isinstance(value, torch.nn.Parameter) else "tensor"
        static = getattr(value, "_dynamo_static_input_type", None)
        source = getattr(node.meta.get("grapharg"), "source", None)
        return f"{kind}|{value.dtype}|{shape}|{strides}|{value.device.type}|{static}|{source.name if source else ''}"
    if isinstance(fake, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"sym|{type(fake).__name__}|{fake.node.expr}"
    return f"{type(value).__name__}|{value!r}"


def _subclass_metadata(value: Any) -> str | None:
    """A tensor subclass's type and flattened attributes ("" for a plain tensor), or None where
    an attribute has no value repr (then the key cannot tell two of them apart)."""
    if not is_traceable_wrapper_subclass(value):
        return ""
    names, context = value.__tensor_flatten__()
    inner = []
    for name in names:
        tensor = getattr(value, name)
        nested = _subclass_metadata(tensor)
        if nested is None:
            return None
        inner.append(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}:{tensor.stride()}:{nested}")
    text = repr(context)
    if " at 0x" in text:
        return None
    return f"{type(value).__module__}.{type(value).__qualname__}|{text}|{inner}"


def cache_key(gm: torch.fx.GraphModule, args: list[Any], scalar_values: dict[str, Any]) -> str | None:
    """The entry's key, or None when the graph holds something the key cannot describe."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}|{torch.__version__}|{_export_code_digest()}".encode())
    digest.update(gm.code.encode())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        return None
    if holds_distributed_state(args):
        return None  # the archive names this process's groups, which the key cannot tell apart
    for node, value in zip(placeholders, args):
        subclass = _subclass_metadata(value)
        if subclass is None:
            return None
        digest.update(f"{node.name}|{_describe_value(node, value)}|{subclass}\n".encode())
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        attribute = attribute_tensor(gm, str(node.target))
        if not isinstance(attribute, torch.Tensor):
            return None  # a submodule or custom object: not described by the key
        subclass = _subclass_metadata(attribute)
        if subclass is None:
            return None
        # Its metadata only: attributes are bound by pointer, the archive holds none of their values.
        digest.update(
            f"{node.target}|{attribute.dtype}|{tuple(attribute.shape)}|{attribute.stride()}|{subclass}".encode()
        )
    digest.update(repr(sorted(scalar_values.items())).encode())
    return digest.hexdigest()


def _entry_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "exports" / f"{key}.pkl"


def load(cache_dir: Path, key: str, gm: torch.fx.GraphModule, args: list[Any]) -> ExportedGraph | None:
    path = _entry_path(cache_dir, key)
    if not path.exists():
        return None
    try:
        with path.open("rb") as f:
            exported: ExportedGraph = pickle.load(f)
    except Exception as error:  # noqa: BLE001 - any unreadable entry is a miss
        log.warning("luminal ignores the damaged export cache entry %s (%s) and exports again", path, error)
        path.unlink(missing_ok=True)
        return None
    exported.weights = {name: args[position] for position, name in exported.weight_positions.items()}
    exported.weights.update({name: attribute_tensor(gm, name) for name in exported.attribute_weights})
    return exported


def store(cache_dir: Path, key: str, exported: ExportedGraph) -> None:
    path = _entry_path(cache_dir, key)
    weights, exported.weights = exported.weights, {}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        with temporary.open("wb") as f:
            pickle.dump(exported, f)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename: a crash leaves the old entry or the new
        temporary.replace(path)  # atomic: a concurrent reader sees the old entry or the new one
    except Exception as error:  # noqa: BLE001 - an unwritable cache costs speed, not correctness
        log.info("luminal could not write the export cache entry %s: %s", path, error)
    finally:
        exported.weights = weights


def cached_export(
    export: Callable[[torch.fx.GraphModule, list[Any], dict[str, Any]], ExportedGraph],
    gm: torch.fx.GraphModule,
    args: list[Any],
    scalar_values: dict[str, Any],
    cache_dir: str | None,
) -> tuple[ExportedGraph, bool]:
    """export(gm, args, scalar_values), or the cached result of an identical earlier export.
    Returns (exported, whether it came from the cache)."""
    directory = Path(cache_dir) if cache_dir else default_cache_dir()
    key = cache_key(gm, args, scalar_values)
    if key is not None:
        hit = load(directory, key, gm, args)
        if hit is not None:
            return hit, True
    exported = export(gm, args, scalar_values)
    if key is not None:
        store(directory, key, exported)
    return exported, False
