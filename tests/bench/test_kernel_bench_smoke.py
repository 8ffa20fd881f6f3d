"""Smoke test of the kernel bench (benchmarks/kernels/run.py): one small kernel, eager and
luminal, quick settings, into a temp directory. About 20 s on an idle 2-core machine."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "benchmarks" / "kernels" / "run.py"

pytestmark = pytest.mark.bench_smoke


def test_luminal_row_has_the_backends_own_call_time(tmp_path):
    proc = subprocess.run([sys.executable, str(RUN), "--quick", "--impls", "eager", "luminal", "--kernels", "softmax",
                           "--dtypes", "f32", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "kernels_latest.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["impl"] for row in rows} == {"eager", "luminal"}
    for row in rows:
        assert not row["error"], row
        assert float(row["latency_us"]) > 0
        assert "WRONG OUTPUT" not in row["note"], row
    # luminal's rows also time the program its backend returned, called without dynamo's wrapper:
    # a part of the compiled call, so never slower than it by more than timing noise.
    for row in (r for r in rows if r["impl"] == "luminal"):
        assert 0 < float(row["backend_call_us"]) < 2 * float(row["latency_us"]), row
    assert "luminal call µs" in (tmp_path / "kernels_latest.md").read_text()
