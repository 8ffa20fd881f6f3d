"""The options `torch.compile(..., backend="luminal", options={...})` accepts, validated in one place."""

from __future__ import annotations

from typing import Any

from .errors import UserError

# name -> (type, description). docs/options.md documents the same list.
KNOWN_OPTIONS: dict[str, tuple[type, str]] = {
    "num_threads": (int, "threads the runtime may use; 0 = the runtime's default"),
    "search_iterations": (int, "bound on the schedule search; 0 = heuristics only"),
    "fallback": (str, "an op with no native translation: 'aten' (run it through ATen, logged) or 'error'"),
    "debug_dir": (str, "write the IR and compile stats to this directory"),
    "cache_dir": (str, "where generated kernels are cached"),
    "cpu_isa": (str, "the cpu runtime's kernels: 'native' (every extension of this CPU) or 'avx2' (no AVX-512)"),
    "profile": (bool, "time each step of every call: stats['step_ms_last_run'] (the cpu runtime)"),
    "pack_int4_weights": (bool, "decode GEMVs read int4 weights packed two a byte, a copy made at compile (the cpu runtime)"),
    "runtime": (str, "'cpu' (default for CPU tensors: generated kernels) or 'reference' (the interpreter)"),
    "payload_size_ratio": (float, "luminal.compile(path): how many times its tensor's bytes a weight entry may hold"),
}
# Read by Python, never by the C++ compile: which runtime, and how a .pt2 file is checked.
_PYTHON_ONLY = ("runtime", "payload_size_ratio")

# 'aten' (the default) runs an op luminal does not translate through torch's own kernel, at a
# partition boundary, and logs it; 'error' raises UnsupportedError naming the op instead.
FALLBACK_POLICIES = ("aten", "error")
# The instruction sets the cpu runtime's generated kernels may use (csrc/runtime/cpu/jit.h).
CPU_ISAS = ("native", "avx2")
# The built-in runtimes for CPU tensors: the optimising one (the default) and the interpreter
# the tests compare against, which is also how to bisect a wrong answer to the generated kernels.
RUNTIMES = ("cpu", "reference")


def check_runtime(runtime: str | None) -> None:
    if runtime is not None and runtime not in RUNTIMES:
        valid = ", ".join(repr(r) for r in RUNTIMES)
        raise UserError(f"unknown luminal runtime {runtime!r}; valid runtimes are: {valid}")


def validate_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Returns a copy of `options` after checking names, types and values."""
    options = dict(options or {})
    for name, value in options.items():
        if name not in KNOWN_OPTIONS:
            valid = ", ".join(sorted(KNOWN_OPTIONS))
            raise UserError(f"unknown luminal option {name!r}; valid options are: {valid}")
        expected, _ = KNOWN_OPTIONS[name]
        accepted = (int, float) if expected is float else expected  # 8 means 8.0
        if not isinstance(value, accepted) or (expected is not bool and isinstance(value, bool)):
            raise UserError(f"luminal option {name!r} must be {expected.__name__}, got {type(value).__name__}")
    if options.get("fallback", "aten") not in FALLBACK_POLICIES:
        raise UserError(f"luminal option 'fallback' must be one of {FALLBACK_POLICIES}, got {options['fallback']!r}")
    if options.get("cpu_isa", "native") not in CPU_ISAS:
        raise UserError(f"luminal option 'cpu_isa' must be one of {CPU_ISAS}, got {options['cpu_isa']!r}")
    check_runtime(options.get("runtime"))
    if options.get("num_threads", 0) < 0 or options.get("search_iterations", 0) < 0:
        raise UserError("luminal options 'num_threads' and 'search_iterations' must be >= 0")
    if options.get("payload_size_ratio", 4.0) < 1:
        raise UserError(f"luminal option 'payload_size_ratio' must be >= 1, got {options['payload_size_ratio']}")
    return options


def core_options(options: dict[str, Any]) -> dict[str, Any]:
    """The subset of validated options the C++ core's compile reads."""
    return {k: v for k, v in options.items() if k not in _PYTHON_ONLY}
