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


def test_the_direct_call_takes_its_turns_with_the_impls(monkeypatch):
    # Timed after the impls' rounds, the direct call met a load the compiled call had not (8 ms
    # against its 64 µs in a CI run beside another test worker): it is timed in the same rounds.
    import argparse

    sys.path.insert(0, str(REPO))
    from benchmarks.kernels import worker
    from benchmarks.kernels.kernels import all_kernels

    timed_together = []
    time_interleaved = worker.time_interleaved

    def recording(fns, *args, **kwargs):
        timed_together.append(sorted(fns))
        return time_interleaved(fns, *args, **kwargs)

    monkeypatch.setattr(worker, "time_interleaved", recording)
    softmax = next(k for k in all_kernels() if k.kernel_id == "softmax")
    args = argparse.Namespace(impls=["eager", "luminal"], threads=1, warmups=1, runs=3, time_cap=0.2, slow_call_s=20.0)
    rows = worker.kernel_rows(softmax.key("f32"), softmax, "f32", args)
    assert timed_together == [sorted(["eager", "luminal", worker.DIRECT])]
    assert float(rows["luminal"]["backend_call_us"]) > 0, rows


def test_impls_take_turns_within_a_kernel():
    # Timing each impl over every kernel one after another let the machine's drift between them
    # decide rows under ~200 µs; the worker alternates the impls' runs in rounds instead.
    sys.path.insert(0, str(REPO))
    from benchmarks.kernels.worker import ROUNDS, time_interleaved

    calls = []
    fns = {impl: (lambda impl=impl: calls.append(impl)) for impl in ("eager", "inductor", "luminal")}
    results = time_interleaved(fns, dict.fromkeys(fns, 1e-6), (), warmups=2, runs=10, cap_s=1.0)
    assert {impl: r["runs"] for impl, r in results.items()} == {"eager": 10, "inductor": 10, "luminal": 10}
    timed = calls[3 * 2:]  # after two warmups each
    switches = sum(a != b for a, b in zip(timed, timed[1:]))
    assert len(timed) == 30 and switches == 3 * ROUNDS - 1, timed


def test_an_impl_too_slow_to_time_is_left_out_before_it_costs_its_peers_their_rows():
    # gemm 4096x1024x4096 bf16: eager's and inductor's calls took over a minute each, the shared
    # worker timed out, and luminal's row was lost with theirs.
    import time

    sys.path.insert(0, str(REPO))
    from benchmarks.kernels.worker import one_call_s, too_slow_to_time

    assert one_call_s(lambda: time.sleep(0.05), ()) >= 0.05
    assert "not timed" in too_slow_to_time(0.05, 0.01)
    assert too_slow_to_time(one_call_s(lambda: None, ()), 1.0) is None


def test_a_bf16_gemm_row_is_held_to_the_bf16_gemm_peak():
    # On a CPU that multiplies bf16 pairs (Zen 4: about 2.2x sgemm) the bf16 GEMM rows were
    # divided by sgemm's peak and read 200% "of the roofline": no measure of how far from the
    # machine's bf16 rate a prefill GEMM is (issue 24: >= 85% of the peak of its dtype).
    sys.path.insert(0, str(REPO))
    from benchmarks.kernels.kernels import all_kernels
    from benchmarks.kernels.run import build_rows

    gemm = next(k for k in all_kernels() if k.kernel_id == "gemm" and k.shape == (1024, 1024, 1024))
    flops = 2 * 1024**3
    result = {"latency_us": 10_000.0, "bytes": 1.0, "flops": flops, "compile_ms": 1.0, "runs": 1, "warmups": 0}
    measured = {"luminal": {gemm.key("f32"): result, gemm.key("bf16"): result}}
    roof = {"copy_gbps": 30.0, "sgemm_gflops": flops / 1e9 / 0.02, "bf16_gemm_gflops": flops / 1e9 / 0.01}
    info = {"cores": 2, "git_commit": "x"}
    pct = {row["dtype"]: row["pct_roofline"] for row in build_rows(measured, roof, info)}
    assert pct == {"f32": 200.0, "bf16": 100.0}
    # A roofline from before the bf16 peak was measured holds bf16 to sgemm's, as it did.
    del roof["bf16_gemm_gflops"]
    pct = {row["dtype"]: row["pct_roofline"] for row in build_rows(measured, roof, info)}
    assert pct == {"f32": 200.0, "bf16": 200.0}
