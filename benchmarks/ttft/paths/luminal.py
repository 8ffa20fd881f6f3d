"""Path `luminal`: torch.compile(model, backend="luminal").

dynamic as in the inductor path (False unless the config asks for automatic dynamic). The
runtime gets the same thread count as torch, the cache dir the orchestrator passes and the
config's luminal_options. Every
compiled graph is kept, so the bench can read the bytes the runtime copied
(`bytes_copied_total` in each graph's stats).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.ttft.measure import main  # noqa: E402


COMPILED = []  # every CompiledModel the backend returned


def prepare(model, args, search_iterations: int = 0):
    import luminal

    options = {"num_threads": args.threads, "search_iterations": search_iterations}
    options.update(args.luminal_options)
    if args.cache_dir:
        options["cache_dir"] = args.cache_dir

    def backend(gm, example_inputs):
        compiled = luminal.luminal_backend(gm, example_inputs, options=options)
        COMPILED.append(compiled)
        return compiled

    return torch.compile(model, backend=backend, dynamic=args.dynamic)


def bytes_copied() -> int:
    return sum(c.stats.get("bytes_copied_total", 0) for c in COMPILED)


# What luminal's own compile of a graph consists of (CompiledModel.stats).
OWN_PHASES = ("export_ms", "read_ms", "translate_ms", "runtime_compile_ms")


def backend_ms() -> float:
    return sum(c.stats.get(phase, 0) for c in COMPILED for phase in OWN_PHASES)


if __name__ == "__main__":
    main("luminal", prepare, bytes_copied, backend_ms)
