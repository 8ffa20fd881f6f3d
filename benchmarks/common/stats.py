"""Summary statistics stored for every timed metric."""

from __future__ import annotations

import statistics


def summarize(prefix: str, samples: list[float]) -> dict[str, object]:
    """`<prefix>_ms` (median), `_mean_ms`, `_min_ms`, `_max_ms` and the raw `_samples`; {} when no samples."""
    if not samples:
        return {}
    return {
        f"{prefix}_ms": statistics.median(samples),
        f"{prefix}_mean_ms": statistics.fmean(samples),
        f"{prefix}_min_ms": min(samples),
        f"{prefix}_max_ms": max(samples),
        f"{prefix}_samples": samples,
    }
