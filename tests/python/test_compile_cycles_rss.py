"""A process that compiles new shapes for hours must not grow because of luminal: RSS over many
compile cycles (dynamo reset, compile with new shapes and new kernels, 3 calls) stays within
5 MB of the same loop with backend="eager", whose growth is torch's own (dynamo keeps every
generated graph's source). Each loop runs in a fresh process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LOOP = textwrap.dedent(
    """
    import gc, sys, torch, torch._dynamo, luminal
    backend, cycles, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]

    def rss_mb():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024

    settled = None
    for i in range(cycles):
        torch._dynamo.reset()
        width = 8 + i  # new shapes every cycle: a new export and new kernels
        model = torch.nn.Sequential(torch.nn.Linear(width, 16), torch.nn.GELU(), torch.nn.LayerNorm(16)).eval()
        options = {"options": {"cache_dir": cache}} if backend == "luminal" else {}
        compiled = torch.compile(model, backend=backend, **options)
        x = torch.randn(3, width)
        with torch.no_grad():
            for _ in range(3):
                compiled(x)
        del compiled, model
        gc.collect()
        if i == 19:  # allocator pools and one-off caches have settled by now
            settled = rss_mb()
    print("GROWTH", rss_mb() - settled)
    """
)


def growth_mb(backend: str, cycles: int, cache: Path) -> float:
    result = subprocess.run(
        [sys.executable, "-c", LOOP, backend, str(cycles), str(cache)],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("GROWTH")]
    return float(line.split()[1])


def check_growth(cycles: int, tmp_path: Path) -> None:
    ours = growth_mb("luminal", cycles, tmp_path / "cache")
    eager = growth_mb("eager", cycles, tmp_path / "cache")
    assert ours - eager < 5.0, f"{cycles} compile cycles: luminal grew {ours:.1f} MB, eager {eager:.1f} MB"


def test_300_compile_cycles_grow_rss_no_more_than_eager(tmp_path: Path) -> None:
    check_growth(300, tmp_path)


@pytest.mark.slow
def test_1000_compile_cycles_grow_rss_no_more_than_eager(tmp_path: Path) -> None:
    check_growth(1000, tmp_path)
