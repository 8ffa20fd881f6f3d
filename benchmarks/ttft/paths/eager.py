"""Path `eager`: the HF model as is, the baseline every ratio is taken against."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # repo root, so `benchmarks` imports

from benchmarks.ttft.measure import main  # noqa: E402


def prepare(model, args):
    return model


if __name__ == "__main__":
    main("eager", prepare)
