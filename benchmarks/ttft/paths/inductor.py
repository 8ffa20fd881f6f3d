"""Path `inductor`: torch.compile(model) with torch's default backend.

dynamic=False in both compiled paths: each shape (the (1,1) step, the (1,P) prefill) gets its own
static graph, so neither backend is judged on dynamic-shape support. Configs with
`automatic_dynamic` (sliding-window caches) pass torch.compile's default, dynamic=None, instead.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.ttft.measure import main  # noqa: E402


def prepare(model, args):
    return torch.compile(model, dynamic=args.dynamic)


if __name__ == "__main__":
    main("inductor", prepare)
