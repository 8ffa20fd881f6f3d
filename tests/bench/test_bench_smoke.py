"""Smoke tests of the benchmark harness: the `tiny` config through all three paths into a temp db,
and the orchestrator's handling of bad input and of a path that times out. About 100 s on an idle
2-core machine (inductor's cold compile of the two tiny shapes dominates); the timeouts leave room
for a machine shared with other work."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "benchmarks" / "ttft" / "run.py"

pytestmark = pytest.mark.bench_smoke


def run_bench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def measured_rows(db_path: Path) -> list[sqlite3.Row]:
    """Every result row in the db, each checked to have measured (no error row)."""
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM results").fetchall()
    for row in rows:
        assert row["error"] is None, f"{row['config']} {row['path']}: {row['error']}"
    return rows


def test_tiny_config_through_all_paths(tmp_path):
    db_path, out = tmp_path / "bench.db", tmp_path / "out"
    proc = run_bench("--configs", "tiny", "--iters", "1", "--warmups", "0", "--db", str(db_path), "--out", str(out),
                     "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]

    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    runs = conn.execute("SELECT * FROM runs").fetchall()
    assert len(runs) == 1
    run = runs[0]
    for column in ("git_commit", "cpu_model", "torch_version"):
        assert run[column], column
    assert run["cores"] >= 1 and run["ram_gb"] > 0 and run["threads"] == 2
    assert len(run["run_id"].rsplit("-", 1)[-1]) == 6, "run ids carry microseconds"

    rows = {r["path"]: r for r in conn.execute("SELECT * FROM results WHERE run_id = ?", (run["run_id"],))}
    assert set(rows) == {"eager", "inductor", "luminal"}
    for path in ("eager", "inductor"):
        row = rows[path]
        assert row["error"] is None, f"{path}: {row['error']}"
        assert row["ttft_seq_ms"] > 0 and row["ttft_batched_ms"] > 0 and row["tpot_ms"] > 0
        assert row["compile_ms"] > 0 and row["peak_rss_mb"] > 0
        assert len(json.loads(row["tpot_samples"])) == 1
        assert len(json.loads(row["tokens"])) == 1 + row["decode_tokens"]
    # luminal may not support everything the tiny model needs yet: it must either have measured
    # or say why not in an error row; a missing row or a silent empty one is the failure.
    luminal = rows["luminal"]
    assert luminal["error"] or luminal["ttft_seq_ms"] > 0
    # The same metrics again from one process running every path in turn (interleaved.py).
    for row in rows.values():
        assert row["ttft_seq_interleaved_ms"] > 0 and row["ttft_batched_interleaved_ms"] > 0
        assert row["tpot_interleaved_ms"] > 0 and len(json.loads(row["tpot_interleaved_samples"])) == 1
    # A decode step copies its new K/V rows (plus the returned logits), never a whole cache.
    kv_row_bytes, max_cache_len = rows["eager"]["kv_row_bytes"], 256
    assert kv_row_bytes > 0 and rows["eager"]["decode_bytes_copied"] is None
    assert kv_row_bytes <= luminal["decode_bytes_copied"] < kv_row_bytes * max_cache_len // 8
    # The decode floors' terms: the weights a step reads and the run's copy and read bandwidths.
    assert rows["eager"]["weight_bytes"] > 0 and rows["eager"]["copy_gbps"] > 0 and rows["eager"]["read_gbps"] > 0
    # The read bandwidth is sampled again in every interleaved round, for the interleaved TPOT's floor.
    assert rows["eager"]["read_gbps_interleaved"] > 0
    assert rows["eager"]["read_gbps_interleaved"] == rows["luminal"]["read_gbps_interleaved"]

    html = (out / "dashboard.html").read_text()
    assert "tiny" in html and "<svg" in html and "data:image/png;base64," in html
    assert "src=\"http" not in html and "href=\"http" not in html, "the dashboard must render offline"
    assert (out / "ttft.png").read_bytes().startswith(b"\x89PNG")
    latest = (out / "ttft_latest.md").read_text()
    assert "| metric | eager | inductor | luminal |" in latest
    assert "| TPOT, interleaved (ms/token) |" in latest
    assert "| TPOT ÷ copy floor |" in latest and "| TPOT ÷ read-only stream floor |" in latest
    assert "| TPOT, interleaved ÷ that floor |" in latest
    assert (out / "ttft_latest.csv").read_text().count("\n") == 4  # header + 3 paths


def test_quantized_config_counts_the_bytes_torchao_holds(tmp_path):
    pytest.importorskip("torchao", reason="torchao==0.18.0 (scripts/install_deps.sh)")
    db_path, out = tmp_path / "bench.db", tmp_path / "out"
    proc = run_bench("--configs", "tiny", "tiny-int4", "--paths", "eager", "luminal", "--no-interleaved", "--db",
                     str(db_path), "--out", str(out), "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {(r["config"], r["path"]): r for r in measured_rows(db_path)}
    quantized = rows[("tiny-int4", "luminal")]
    assert quantized["quantization"] == "int4"
    # int8 values, a scale and zero point per 32: about 1.16 bytes per weight against f32's 4.
    assert quantized["weight_bytes"] < rows[("tiny", "luminal")]["weight_bytes"] / 3
    assert "torchao int4 weights" in (out / "ttft_latest.md").read_text()
    assert all(row["tpot_interleaved_ms"] is None for row in rows.values())
    assert "interleaved (" not in (out / "ttft_latest.md").read_text(), "--no-interleaved: no interleaved rows"


def test_long_prompt_config_decodes_after_the_batched_prefill(tmp_path):
    """`prompt_len` repeats the prompt ids; `sequential_prefill = false` fills the cache with the
    batched prefill and decodes from there (the -long configs)."""
    configs = tmp_path / "configs.toml"
    configs.write_text((REPO / "benchmarks" / "ttft" / "configs.toml").read_text() + """
[configs.tiny-long]
base = "tiny"
prompt_len = 70
max_cache_len = 128
sequential_prefill = false
""")
    db_path, out = tmp_path / "bench.db", tmp_path / "out"
    proc = run_bench("--configs", "tiny-long", "--paths", "eager", "luminal", "--iters", "1", "--warmups", "0",
                     "--configs-file", str(configs), "--db", str(db_path), "--out", str(out), "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["path"]: r for r in measured_rows(db_path)}
    for row in rows.values():
        assert row["prompt_tokens"] == 70
        assert row["ttft_seq_ms"] is None and row["ttft_batched_ms"] > 0 and row["tpot_ms"] > 0
        assert row["ttft_seq_interleaved_ms"] is None
        assert row["ttft_batched_interleaved_ms"] > 0 and row["tpot_interleaved_ms"] > 0
        assert len(json.loads(row["tokens"])) == 1 + row["decode_tokens"]
    assert rows["luminal"]["tokens_match_eager"] == 1
    assert rows["luminal"]["decode_bytes_copied"] < rows["eager"]["kv_row_bytes"] * 128 // 8
    # The prefill's compute floor: eager's count of its FLOPs, at least its Linears' 2 * P * weights
    # (tiny: per layer q, o 64x64, k, v 32x64, the MLP 3 x 64x128; two layers and a 256x64 head).
    linear_weights = 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 128) + 256 * 64
    assert rows["eager"]["prefill_flops"] >= 2 * 70 * linear_weights, rows["eager"]["prefill_flops"]
    assert rows["eager"]["sgemm_gflops"] > 0
    # The peak is sampled again in every interleaved round, for the interleaved TTFT's floor.
    assert rows["eager"]["sgemm_gflops_interleaved"] > 0
    assert rows["eager"]["sgemm_gflops_interleaved"] == rows["luminal"]["sgemm_gflops_interleaved"]
    table = (out / "ttft_latest.md").read_text()
    assert "| batched TTFT ÷ compute floor |" in table
    assert "| batched TTFT, interleaved ÷ that floor |" in table


def test_encoder_config_times_one_forward(tmp_path):
    """Also the luminal_search path (the schedule search on): its own column and speedups."""
    db_path, out = tmp_path / "bench.db", tmp_path / "out"
    proc = run_bench("--configs", "tiny-bert", "--paths", "eager", "luminal", "luminal_search", "--db", str(db_path),
                     "--out", str(out), "--timeout", "300")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["path"]: r for r in measured_rows(db_path)}
    for row in rows.values():
        assert row["ttft_batched_ms"] > 0 and row["compile_batched_ms"] > 0
        assert row["tpot_ms"] is None and row["ttft_seq_ms"] is None
        assert row["ttft_batched_interleaved_ms"] > 0 and row["tpot_interleaved_ms"] is None
        assert len(json.loads(row["tokens"])) == 8  # an argmax id per prompt position
    assert rows["luminal"]["tokens_match_eager"] == 1
    assert rows["luminal_search"]["tokens_match_eager"] == 1
    table = (out / "ttft_latest.md").read_text()
    assert "encoder: one forward" in table
    assert "| metric | eager | inductor | luminal | luminal_search |" in table and "search vs luminal" in table


def test_failed_interleaved_run_is_a_note_beside_the_paths_own_numbers():
    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.run import merge_interleaved

    row = {"path": "luminal", "tpot_ms": 5.0, "note": None}
    assert merge_interleaved(row, {"tpot_interleaved_ms": 4.0})["tpot_interleaved_ms"] == 4.0
    failed = merge_interleaved({**row, "note": "batched prefill failed"}, {"error": "timed out after 60 s"})
    assert failed["tpot_ms"] == 5.0 and "tpot_interleaved_ms" not in failed
    assert failed["note"] == "batched prefill failed; interleaved timing failed: timed out after 60 s"


def test_timed_out_path_is_an_error_row(tmp_path):
    db_path = tmp_path / "bench.db"
    proc = run_bench("--configs", "tiny", "--paths", "eager", "--timeout", "0.5", "--db", str(db_path),
                     "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (error,) = sqlite3.connect(db_path).execute("SELECT error FROM results").fetchone()
    assert error.startswith("timed out after")


@pytest.mark.parametrize(
    "flag, name, listing", [("--configs", "no-such-model", "valid configs:"), ("--paths", "jax", "valid paths:")]
)
def test_unknown_name_lists_valid_ones(tmp_path, flag, name, listing):
    proc = run_bench(flag, name, "--db", str(tmp_path / "bench.db"), "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2
    assert name in proc.stderr and listing in proc.stderr
    assert "tiny" in proc.stderr or "luminal" in proc.stderr
    assert not (tmp_path / "bench.db").exists(), "bad input must fail before anything is recorded"


def test_token_disagreement_says_how_many_leading_tokens_agree():
    # A near-tie flipping the last token and a graph decoding garbage must not both read "NO".
    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.render import token_agreement

    eager = {"tokens": [5, 6, 7, 8]}
    assert token_agreement({"tokens_match_eager": 1, "tokens": [5, 6, 7, 8]}, eager) == "yes"
    assert token_agreement({"tokens_match_eager": 0, "tokens": [5, 6, 7, 9]}, eager) == "NO: the first 3 of 4 agree"
    assert token_agreement({"tokens_match_eager": 0, "tokens": [1, 1, 1, 1]}, eager) == "NO: the first 0 of 4 agree"
    assert token_agreement({"tokens_match_eager": None}, eager) == "–"


def test_a_half_configs_compute_floor_divides_by_its_dtypes_gemm_peak():
    # A bf16 prefill's GEMMs run on bf16 dot products where the CPU has them, at twice sgemm's rate
    # or more: its floor divides by the bf16 peak the run measured (half_gemm_gflops); an f32
    # config, or a row from before that column, by sgemm's, each labelled with the peak's dtype.
    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.render import table_rows

    def row(path, dtype, **peaks):
        return {"path": path, "dtype": dtype, "prefill_flops": 4e9, "ttft_batched_ms": 40.0,
                "ttft_batched_interleaved_ms": 30.0, "sgemm_gflops": 100.0, "sgemm_gflops_interleaved": 100.0,
                **peaks}

    def floors(paths):
        return {r[0]: r[1:4] for r in table_rows(paths) if "floor" in r[0]}

    half = {"half_gemm_gflops": 400.0, "half_gemm_gflops_interleaved": 200.0}
    bf16 = floors({p: row(p, "bf16", **half) for p in ("eager", "inductor", "luminal")})
    assert bf16["TTFT floor (ms): prefill FLOPs ÷ bf16 GEMM peak"] == ["10.00"] * 3
    assert bf16["batched TTFT ÷ compute floor"] == ["4.00x"] * 3
    assert bf16["TTFT floor, interleaved (ms): prefill FLOPs ÷ bf16 GEMM peak sampled each round"] == ["20.00"] * 3
    assert bf16["batched TTFT, interleaved ÷ that floor"] == ["1.50x"] * 3
    f32 = floors({p: row(p, "f32") for p in ("eager", "inductor", "luminal")})
    assert f32["TTFT floor (ms): prefill FLOPs ÷ f32 GEMM peak"] == ["40.00"] * 3
    assert f32["batched TTFT ÷ compute floor"] == ["1.00x"] * 3


def test_the_interleaved_tpot_is_divided_by_the_bandwidth_its_rounds_sampled():
    # Each path's own TPOT against the read bandwidth measured at the start of the run; the
    # interleaved TPOT against the median of the samples taken in its rounds; a row from before
    # that column has no interleaved floor.
    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.render import table_rows

    def row(path, **reads):
        return {"path": path, "weight_bytes": 10**9, "tpot_ms": 40.0, "tpot_interleaved_ms": 30.0, "read_gbps": 50.0,
                **reads}

    def floors(paths):
        return {r[0]: r[1:4] for r in table_rows(paths) if "floor" in r[0]}

    sampled = floors({p: row(p, read_gbps_interleaved=100.0) for p in ("eager", "inductor", "luminal")})
    assert sampled["TPOT floor (ms/token): weight bytes ÷ read-only stream bandwidth"] == ["20.00"] * 3
    assert sampled["TPOT ÷ read-only stream floor"] == ["2.00x"] * 3
    interleaved = "TPOT floor, interleaved (ms/token): weight bytes ÷ read-only stream bandwidth sampled each round"
    assert sampled[interleaved] == ["10.00"] * 3
    assert sampled["TPOT, interleaved ÷ that floor"] == ["3.00x"] * 3
    assert interleaved not in floors({p: row(p) for p in ("eager", "inductor", "luminal")})


def test_attention_flops_count_only_the_attended_pairs():
    # torch's counter gives CPU attention 0 FLOPs; the floor counts q·kᵀ and p·v over the pairs the
    # mask lets through: a causal 6-token prompt into an 8-slot cache attends 21 of 48 pairs per head.
    import torch.nn.functional as F

    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.flops import count_flops

    q, k, v = torch.randn(2, 3, 6, 4), torch.randn(2, 3, 8, 4), torch.randn(2, 3, 8, 4)
    mask = torch.ones(6, 8, dtype=torch.bool).tril()
    per_pair = 2 * 4 + 2 * 4
    assert count_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)) == 2 * 3 * 21 * per_pair
    float_mask = torch.zeros(2, 1, 6, 8).masked_fill(~mask, float("-inf"))
    assert count_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)) == 2 * 3 * 21 * per_pair
    assert count_flops(lambda: F.scaled_dot_product_attention(q, k[..., :6, :], v[..., :6, :], is_causal=True)) == \
        2 * 3 * 21 * per_pair
    assert count_flops(lambda: F.scaled_dot_product_attention(q, k, v)) == 2 * 3 * 48 * per_pair


def test_int8_products_count_as_matmuls():
    # torch's counter gives _int_mm (torchao's dynamic-activation int8 Linears) 0 FLOPs.
    sys.path.insert(0, str(REPO))
    from benchmarks.ttft.flops import count_flops

    a, b = torch.ones(32, 64, dtype=torch.int8), torch.ones(64, 16, dtype=torch.int8)
    assert count_flops(lambda: torch._int_mm(a, b)) == 2 * 32 * 64 * 16


def test_decode_split_times_each_paths_graph_inside_its_step(tmp_path):
    """decode_split.py runs the tiny config through inductor and luminal: each step's time inside
    the compiled graph is measured (positive) and is a part of the step, never more."""
    script = REPO / "benchmarks" / "ttft" / "decode_split.py"
    proc = subprocess.run([sys.executable, str(script), "--configs", "tiny", "--rounds", "2", "--steps", "4",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = json.loads((tmp_path / "decode_split.json").read_text())["configs"]
    assert result["config"] == "tiny" and result["floor_ms"] > 0
    for path in ("inductor", "luminal"):
        split = result[path]
        assert 0 < split["graph_ms"] < split["step_ms"], (path, split)
    assert "| tiny |" in (tmp_path / "decode_split.md").read_text()
