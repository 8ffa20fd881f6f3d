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


def start_loop(backend: str, cycles: int, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """The loop in a fresh process, its output into a file (a full pipe would stall it)."""
    log = tmp_path / f"{backend}.log"
    with open(log, "w") as out:
        loop = subprocess.Popen([sys.executable, "-c", LOOP, backend, str(cycles), str(tmp_path / "cache")],
                                stdout=out, stderr=subprocess.STDOUT)
    return loop, log


def growth_mb(loop: subprocess.Popen, log: Path) -> float:
    returncode = loop.wait(timeout=3000)
    output = log.read_text()
    assert returncode == 0, output[-3000:]
    (line,) = [line for line in output.splitlines() if line.startswith("GROWTH")]
    return float(line.split()[1])


def check_growth(cycles: int, tmp_path: Path) -> None:
    # The two loops are independent processes, each measuring its own RSS: side by side, the
    # test takes the longer loop's time, not the sum (it was the parallel suite's last test).
    loops = [start_loop(backend, cycles, tmp_path) for backend in ("luminal", "eager")]
    try:
        ours, eager = [growth_mb(loop, log) for loop, log in loops]
    finally:
        for loop, _ in loops:
            loop.kill()
            loop.wait()
    assert ours - eager < 5.0, f"{cycles} compile cycles: luminal grew {ours:.1f} MB, eager {eager:.1f} MB"


def test_300_compile_cycles_grow_rss_no_more_than_eager(tmp_path: Path) -> None:
    check_growth(300, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # past scripts/test.sh's per-test limit: its loops take up to 3000 s
def test_1000_compile_cycles_grow_rss_no_more_than_eager(tmp_path: Path) -> None:
    check_growth(1000, tmp_path)
