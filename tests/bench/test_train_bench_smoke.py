"""Smoke test of the training-step bench: the `tiny` config, eager and luminal, both precisions,
into a temp db (inductor's cold compile would triple the time and is exercised by the TTFT
smoke test). About 40 s on an idle 2-core machine."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "benchmarks" / "train" / "run.py"

pytestmark = pytest.mark.bench_smoke


def test_tiny_training_steps_for_eager_and_luminal(tmp_path):
    db_path, out = tmp_path / "bench.db", tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--configs", "tiny", "--paths", "eager", "luminal", "--batch", "2", "--seq", "16",
         "--iters", "2", "--warmups", "0", "--db", str(db_path), "--out", str(out), "--timeout", "300"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    rows = {(r["config"], r["path"]): r for r in conn.execute("SELECT * FROM train_results")}
    assert set(rows) == {(f"tiny/{p}", path) for p in ("f32", "autocast") for path in ("eager", "luminal")}
    for (config, path), row in rows.items():
        assert row["error"] is None, f"{config} {path}: {row['error']}"
        assert row["step_ms"] > 0 and row["forward_ms"] > 0 and row["backward_ms"] > 0 and row["optimizer_ms"] > 0
        assert len(json.loads(row["step_samples"])) == 2
        assert len(json.loads(row["losses"])) == 3  # the compile step and two timed ones
        assert row["gemm_floor_ms"] > 0 and row["peak_rss_mb"] > 0
    for precision in ("f32", "autocast"):
        luminal = rows[(f"tiny/{precision}", "luminal")]
        # The same model, batch and optimizer: luminal's losses follow eager's.
        assert luminal["loss_max_rel_diff"] < 1e-2, luminal["loss_max_rel_diff"]
        assert json.loads(luminal["fallback_ops"]) == [] and luminal["graphs"] >= 1
        assert luminal["vs_eager"] > 0 and luminal["backend_compile_ms"] > 0
    latest = (out / "train" / "train_latest.md").read_text()
    assert "| tiny/autocast | luminal |" in latest
    assert "Training step" in (out / "dashboard.html").read_text()
