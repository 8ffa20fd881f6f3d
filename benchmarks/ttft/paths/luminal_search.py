"""Path `luminal_search`: the `luminal` path with the schedule search on (search_iterations=64):
each shape's first call times the thread-pool split of its kernels and ATen's matmul against
OpenBLAS, within 64 calls, and keeps what is faster (docs/options.md). The search's time counts
in the compile rows; the cache it writes is the bench's fresh per-path cache, so it always searches.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # repo root, so `benchmarks` imports

from benchmarks.ttft.measure import main  # noqa: E402
from benchmarks.ttft.paths import luminal  # noqa: E402

SEARCH_ITERATIONS = 64


def prepare(model, args):
    return luminal.prepare(model, args, SEARCH_ITERATIONS)


if __name__ == "__main__":
    main("luminal_search", prepare, luminal.bytes_copied, luminal.backend_ms)
