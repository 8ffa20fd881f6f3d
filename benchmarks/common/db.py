"""SQLite store for every bench run: `runs` (one row per invocation, with the machine it ran on),
`results` (TTFT/TPOT: one row per run x path x config), `compile_results` (cold/warm compile)
and `train_results` (training steps: one row per run x path x config/precision).

The file is committed so history accumulates across commits; it stays small because samples are
stored once, as rounded JSON, and nothing else is kept per iteration.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

RUN_COLUMNS = {
    "run_id": "TEXT PRIMARY KEY",
    "mode": "TEXT",
    "timestamp": "TEXT",
    "git_commit": "TEXT",
    "cpu_model": "TEXT",
    "cores": "INTEGER",
    "ram_gb": "REAL",
    "os": "TEXT",
    "python_version": "TEXT",
    "torch_version": "TEXT",
    "transformers_version": "TEXT",
    "threads": "INTEGER",
    "args": "TEXT",
}

_STATS = ("ms", "mean_ms", "min_ms", "max_ms", "samples")
# Each metric as its path's own process timed it, and as benchmarks/ttft/interleaved.py timed it
# with every path in one process.
TIMED_METRICS = ("ttft_seq", "ttft_batched", "tpot", "ttft_seq_interleaved", "ttft_batched_interleaved",
                 "tpot_interleaved")

RESULT_COLUMNS = {
    "path": "TEXT NOT NULL",
    "config": "TEXT NOT NULL",
    "model": "TEXT",
    "dtype": "TEXT",
    "attn_implementation": "TEXT",
    "quantization": "TEXT",
    "automatic_dynamic": "INTEGER",
    "prompt_tokens": "INTEGER",
    "decode_tokens": "INTEGER",
    "iters": "INTEGER",
    "warmups": "INTEGER",
    "threads": "INTEGER",
    "compile_ms": "REAL",
    "compile_batched_ms": "REAL",
    **{f"{m}_{s}": ("TEXT" if s == "samples" else "REAL") for m in TIMED_METRICS for s in _STATS},
    "decode_tps": "REAL",
    "prefill_seq_tps": "REAL",
    "prefill_batched_tps": "REAL",
    "peak_rss_mb": "REAL",
    "kv_row_bytes": "INTEGER",
    # The decode bandwidth floor's terms: the weight bytes one decode step must read (every
    # parameter as stored but an input embedding table it only gathers from) and the machine's
    # copy and read-only bandwidths, measured by the orchestrator at the start of the run.
    "weight_bytes": "INTEGER",
    "copy_gbps": "REAL",
    "read_gbps": "REAL",
    # The read-only bandwidth sampled again once per round of benchmarks/ttft/interleaved.py (the
    # median): the floor for the interleaved TPOT. A shared machine's bandwidth drifts between the
    # start of a run and its interleaved rounds (45 and 74 GB/s in two runs an hour apart).
    "read_gbps_interleaved": "REAL",
    # The batched prefill's compute floor: its FLOPs (eager's row; causal attention counted half)
    # and the machine's f32 GEMM peak, measured by the orchestrator with the bandwidths.
    "prefill_flops": "INTEGER",
    "sgemm_gflops": "REAL",
    # The same peak sampled once per round of benchmarks/ttft/interleaved.py, between the paths'
    # iterations (the median): the floor for the interleaved TTFT, which one sample at the start
    # of a run can miss by a third on a shared machine.
    "sgemm_gflops_interleaved": "REAL",
    # A bf16/f16 config's floor divides by its dtype's GEMM peak instead (the faster of torch's
    # GEMM in that dtype and sgemm's; benchmarks/kernels/roofline.py), sampled the same two ways.
    "half_gemm_gflops": "REAL",
    "half_gemm_gflops_interleaved": "REAL",
    "decode_bytes_copied": "INTEGER",
    "graphs": "INTEGER",
    "tokens": "TEXT",
    "batched_first_token": "INTEGER",
    "tokens_match_eager": "INTEGER",
    "wall_s": "REAL",
    "other_cpu_pct": "REAL",
    "note": "TEXT",
    "error": "TEXT",
}

COMPILE_COLUMNS = {
    "path": "TEXT NOT NULL",
    "config": "TEXT NOT NULL",
    "cold_ms": "REAL",
    "cold_batched_ms": "REAL",
    "warm_ms": "REAL",
    "warm_batched_ms": "REAL",
    # The backend's own part of the first calls (luminal paths): the rest is dynamo and the run.
    "cold_backend_ms": "REAL",
    "cold_backend_batched_ms": "REAL",
    "warm_backend_ms": "REAL",
    "warm_backend_batched_ms": "REAL",
    "cold_wall_s": "REAL",
    "warm_wall_s": "REAL",
    "note": "TEXT",
    "error": "TEXT",
}

TRAIN_COLUMNS = {
    "path": "TEXT NOT NULL",
    "config": "TEXT NOT NULL",  # <ttft config>/<precision>
    "precision": "TEXT",  # f32, or autocast (f32 weights, bf16 autocast)
    "batch": "INTEGER",
    "seq": "INTEGER",
    "iters": "INTEGER",
    "warmups": "INTEGER",
    "threads": "INTEGER",
    "params": "INTEGER",
    "compile_ms": "REAL",  # the first step: compile + one step
    "backend_compile_ms": "REAL",  # luminal's own part of it
    **{f"{m}_{s}": ("TEXT" if s == "samples" else "REAL") for m in ("step", "forward", "backward", "optimizer")
       for s in _STATS},
    "tokens_per_s": "REAL",
    "vs_eager": "REAL",
    "vs_inductor": "REAL",
    "step_gflop": "REAL",
    "gemm_peak_gflops": "REAL",
    "gemm_floor_ms": "REAL",
    "peak_rss_mb": "REAL",
    "losses": "TEXT",
    "loss_max_rel_diff": "REAL",
    "fallback_ops": "TEXT",
    "graphs": "INTEGER",
    "wall_s": "REAL",
    "other_cpu_pct": "REAL",
    "error": "TEXT",
}


def _child_table(name: str, columns: dict[str, str]) -> str:
    body = ",\n  ".join(f"{c} {t}" for c, t in columns.items())
    return f"""CREATE TABLE IF NOT EXISTS {name} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
  {body},
  UNIQUE (run_id, path, config)
)"""


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    runs = ",\n  ".join(f"{c} {t}" for c, t in RUN_COLUMNS.items())
    conn.execute(f"CREATE TABLE IF NOT EXISTS runs (\n  {runs}\n)")
    conn.execute(_child_table("results", RESULT_COLUMNS))
    conn.execute(_child_table("compile_results", COMPILE_COLUMNS))
    conn.execute(_child_table("train_results", TRAIN_COLUMNS))
    # The db is committed and outlives schema changes: add columns newer code knows about.
    tables = (("runs", RUN_COLUMNS), ("results", RESULT_COLUMNS), ("compile_results", COMPILE_COLUMNS),
              ("train_results", TRAIN_COLUMNS))
    for table, columns in tables:
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for name, sql_type in columns.items():
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type.replace(' NOT NULL', '')}")
    conn.execute("CREATE INDEX IF NOT EXISTS results_run ON results(run_id)")
    conn.execute("CREATE INDEX IF NOT EXISTS compile_results_run ON compile_results(run_id)")
    conn.commit()
    return conn


def encode(value: Any) -> Any:
    """A value as stored: lists as rounded JSON, dicts as JSON."""
    if isinstance(value, list):
        return json.dumps([round(v, 4) if isinstance(v, float) else v for v in value])
    if isinstance(value, dict):
        return json.dumps(value)
    return value


def _insert(conn: sqlite3.Connection, table: str, columns: dict[str, str], row: dict[str, Any]) -> None:
    # Keys a script reports but the schema lacks are dropped; the schema is the contract.
    names = [c for c in columns if c in row]
    sql = f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    conn.execute(sql, [encode(row[c]) for c in names])
    conn.commit()


def insert_run(conn: sqlite3.Connection, run: dict[str, Any]) -> None:
    _insert(conn, "runs", RUN_COLUMNS, run)


def insert_result(conn: sqlite3.Connection, run_id: str, row: dict[str, Any]) -> None:
    _insert(conn, "results", {"run_id": "", **RESULT_COLUMNS}, {**row, "run_id": run_id})


def insert_compile_result(conn: sqlite3.Connection, run_id: str, row: dict[str, Any]) -> None:
    _insert(conn, "compile_results", {"run_id": "", **COMPILE_COLUMNS}, {**row, "run_id": run_id})


def insert_train_result(conn: sqlite3.Connection, run_id: str, row: dict[str, Any]) -> None:
    _insert(conn, "train_results", {"run_id": "", **TRAIN_COLUMNS}, {**row, "run_id": run_id})


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    for key in out:
        if (key.endswith("_samples") or key in ("tokens", "args", "losses", "fallback_ops")) and isinstance(out[key], str):
            out[key] = json.loads(out[key])
    return out


def latest_run(conn: sqlite3.Connection, table: str) -> dict[str, Any] | None:
    """The newest run that has rows in `table` ('results' or 'compile_results')."""
    row = conn.execute(
        f"SELECT runs.* FROM runs WHERE run_id IN (SELECT run_id FROM {table}) ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    return _decode(row) if row else None


def load_rows(conn: sqlite3.Connection, table: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """Rows of `table` joined with their run's commit and time; one run or all, oldest first."""
    sql = f"SELECT t.*, runs.git_commit, runs.timestamp FROM {table} t JOIN runs USING (run_id)"
    args: tuple = ()
    if run_id is not None:
        sql += " WHERE run_id = ?"
        args = (run_id,)
    return [_decode(r) for r in conn.execute(sql + " ORDER BY run_id, t.id", args)]


def mark_token_agreement(conn: sqlite3.Connection, run_id: str) -> None:
    """tokens_match_eager = whether a path generated exactly eager's greedy tokens (same JSON text).
    A cheap correctness check: a fast path that decodes different tokens is not comparable."""
    conn.execute(
        """UPDATE results SET tokens_match_eager = (
             tokens = (SELECT e.tokens FROM results e
                       WHERE e.run_id = results.run_id AND e.config = results.config AND e.path = 'eager'))
           WHERE run_id = ? AND path != 'eager' AND tokens IS NOT NULL AND EXISTS (
             SELECT 1 FROM results e WHERE e.run_id = results.run_id AND e.config = results.config
               AND e.path = 'eager' AND e.tokens IS NOT NULL)""",
        (run_id,),
    )
    conn.commit()
