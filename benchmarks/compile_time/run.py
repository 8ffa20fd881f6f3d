"""Compile-time bench: cold and warm compile of each TTFT config, for inductor and luminal.

Per config x path, two processes share one fresh cache directory (TORCHINDUCTOR_CACHE_DIR and
luminal's `cache_dir`): the first starts from empty caches (cold), the second reuses what the first
left (warm). Each runs the TTFT path script with --compile-only, which times the first call of the
(1,1) decode shape and of the (1,P) prefill shape: compile + one run each.

    python benchmarks/compile_time/run.py --configs llama-membound-f32 tiny
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

from benchmarks import dashboard  # noqa: E402
from benchmarks.common import db, runner  # noqa: E402
from benchmarks.common.machine import machine_info, new_run_id  # noqa: E402
from benchmarks.common.progress import Progress  # noqa: E402
from benchmarks.ttft.configs import CONFIGS_FILE, ConfigError, load_configs, select  # noqa: E402
from benchmarks.ttft.run import RESULTS_DIR, check_paths, path_command, thread_env  # noqa: E402

COMPILED_PATHS = ["inductor", "luminal"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["llama-membound-f32"])
    parser.add_argument("--paths", nargs="+", default=COMPILED_PATHS, help="inductor and/or luminal")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per process")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs-file", type=Path, default=CONFIGS_FILE)
    parser.add_argument("--db", type=Path, default=RESULTS_DIR / "bench.db")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    try:
        select(args.configs, load_configs(args.configs_file))
        check_paths(args.paths)
        if "eager" in args.paths:
            raise ConfigError("eager does not compile; valid paths here: " + ", ".join(COMPILED_PATHS))
    except ConfigError as exc:
        parser.error(str(exc))
    return args


def measure(path: str, config: str, args: argparse.Namespace, progress: Progress) -> dict:
    row: dict = {"path": path, "config": config}
    errors = []
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as cache:
        for phase in ("cold", "warm"):
            label = f"{config} x {path} ({phase})"
            start = time.monotonic()
            outcome = runner.run(
                path_command(path, config, args, ["--compile-only", "--cache-dir", str(Path(cache) / "luminal")]),
                args.timeout,
                thread_env(args.threads, str(Path(cache) / "inductor")),
                lambda stage, label=label: progress.update(label, stage),
            )
            result = outcome.result or {}
            row[f"{phase}_ms"] = result.get("compile_ms")
            row[f"{phase}_batched_ms"] = result.get("compile_batched_ms")
            row[f"{phase}_backend_ms"] = result.get("backend_compile_ms")
            row[f"{phase}_backend_batched_ms"] = result.get("backend_compile_batched_ms")
            row[f"{phase}_wall_s"] = time.monotonic() - start
            if result.get("note"):
                row["note"] = result["note"]
            if error := outcome.error():
                errors.append(f"{phase}: {error}")
            progress.advance(label, "ERROR" if error else "ok")
    row["error"] = " | ".join(errors) or None
    return row


def write_latest(rows: list[dict], out: Path) -> list[Path]:
    columns = ["path", "config", *[c for c in db.COMPILE_COLUMNS if c not in ("path", "config")]]
    csv_path, md_path = out / "compile_latest.csv", out / "compile_latest.md"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)

    def s(ms):
        return "–" if ms is None else f"{ms / 1000:.1f}"

    def with_backend(r, phase, shape):
        # "total (the backend's own part)" where the path reports its part.
        own = r.get(f"{phase}_backend{shape}_ms")
        return s(r.get(f"{phase}{shape}_ms")) + ("" if own is None else f" ({own:.0f} ms)")

    lines = ["# Compile time (s): first call of each shape, cold (empty caches) and warm (second process)", "",
             "In parentheses, in ms: luminal's own part (export, archive reading, translation, runtime compile);",
             "the rest of a first call is dynamo's tracing and the call itself.", "",
             "| config | path | cold (1,1) | warm (1,1) | cold (1,P) | warm (1,P) | error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        error = (r.get("error") or "").replace("|", "\\|").replace("\n", " ")[:300]
        cells = [with_backend(r, phase, shape) for shape in ("", "_batched") for phase in ("cold", "warm")]
        lines.append(f"| {r['config']} | {r['path']} | {' | '.join(cells)} | {error} |")
    md_path.write_text("\n".join(lines) + "\n")
    return [csv_path, md_path]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    conn = db.connect(args.db)
    run_id = new_run_id()
    keep = {k: getattr(args, k) for k in ("configs", "paths", "timeout", "threads")}
    db.insert_run(conn, {"run_id": run_id, "mode": "compile", **machine_info(args.threads), "args": json.dumps(keep)})
    progress = Progress(2 * len(args.configs) * len(args.paths))
    rows = []
    for config in args.configs:
        for path in args.paths:
            row = measure(path, config, args, progress)
            db.insert_compile_result(conn, run_id, row)
            rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    written = write_latest(rows, args.out) + [dashboard.write(conn, args.out)]
    print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
