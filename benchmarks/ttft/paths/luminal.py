"""Path `luminal`: torch.compile(model, backend="luminal").

dynamic=False as in the inductor path. The runtime gets the same thread count as torch, and the
compile-time bench's cache dir when it passes one.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.ttft.measure import main  # noqa: E402


def prepare(model, args):
    import luminal  # noqa: F401 - registers the backend even without the entry point

    options = {"num_threads": args.threads}
    if args.cache_dir:
        options["cache_dir"] = args.cache_dir
    return torch.compile(model, backend="luminal", dynamic=False, options=options)


if __name__ == "__main__":
    main("luminal", prepare)
