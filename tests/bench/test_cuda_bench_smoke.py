"""The GPU bench scripts (benchmarks/cuda/run.py, kernel_profile.py) on the CPU: GPU sessions are
rare and short, so the scripts must not rot between them. The `tiny` config with `--device cpu`:
run.py's rows without errors and luminal's tokens eager's; kernel_profile.py's tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "benchmarks" / "cuda" / "run.py"
KERNEL_PROFILE = REPO / "benchmarks" / "cuda" / "kernel_profile.py"

pytestmark = pytest.mark.bench_smoke


def test_the_gpu_bench_runs_the_tiny_config_on_the_cpu(tmp_path):
    args = ["--device", "cpu", "--configs", "tiny", "--paths", "eager", "luminal", "--iters", "1",
            "--decode-tokens", "2", "--timeout", "300", "--out", str(tmp_path)]
    proc = subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=700, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {row["path"]: row for row in json.loads((tmp_path / "cuda_results.json").read_text())}
    assert set(rows) == {"eager", "luminal"}
    for path, row in rows.items():
        assert "error" not in row, f"{path}: {row.get('error')} {row.get('log', '')[-2000:]}"
        assert row["ttft_ms"] > 0 and row["tpot_ms"] > 0 and row["gpu"] == "cpu"
        assert len(row["tokens"]) == 3
    assert rows["luminal"]["tokens"] == rows["eager"]["tokens"]
    assert rows["luminal"]["max_abs_logit_diff_vs_eager"] < 1e-3
    table = (tmp_path / "cuda_results.md").read_text()
    assert "| tiny | luminal |" in table and "error" not in table


def test_the_kernel_profile_tables_the_tiny_config_on_the_cpu(tmp_path):
    args = ["--device", "cpu", "--config", "tiny", "--paths", "luminal", "--iters", "1", "--decode-tokens", "2",
            "--out", str(tmp_path)]
    proc = subprocess.run([sys.executable, str(KERNEL_PROFILE), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = (tmp_path / "profile_tiny.md").read_text()
    assert "failed" not in table, table
    assert "## luminal: 1 prefills of" in table and "## luminal: 2 decode steps" in table
    assert table.count("| all ") == 2
