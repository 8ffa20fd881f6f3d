"""Training-step bench: configs x precisions x paths (eager, inductor, luminal), each in its own
subprocess with fresh caches (benchmarks/train/step.py has the methodology). Stores every row
in bench.db (`train_results`), writes results/train/train_latest.{csv,md} and the dashboard.

    python benchmarks/train/run.py --configs llama-membound-f32 gpt2-f32 --precisions f32 autocast

Beside each step time: tokens/s, the forward / backward / optimizer split, peak RSS, the loss
curve's largest difference from eager's, and a GEMM floor: one step's FLOPs (counted by torch
on the eager model) / this machine's GEMM peak in that precision (gemm_peaks), measured at the
start of the run. step - floor is, roughly, what is not GEMM work.
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
from benchmarks.train.step import PATHS, PRECISIONS  # noqa: E402
from benchmarks.ttft.configs import CONFIGS_FILE, ConfigError, load_configs, select  # noqa: E402
from benchmarks.ttft.run import RESULTS_DIR, thread_env  # noqa: E402

STEP_SCRIPT = Path(__file__).with_name("step.py")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["llama-membound-f32", "gpt2-f32"])
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per path subprocess")
    parser.add_argument("--configs-file", type=Path, default=CONFIGS_FILE)
    parser.add_argument("--db", type=Path, default=RESULTS_DIR / "bench.db")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    try:
        configs = select(args.configs, load_configs(args.configs_file))
    except ConfigError as exc:
        parser.error(str(exc))
    if any(c.dtype != "f32" for c in configs):
        parser.error("train from f32 weights (the -f32 configs); bf16 is the 'autocast' precision")
    return args


def gemm_peaks(threads: int) -> dict[str, float]:
    """GFLOP/s a GEMM of each precision can reach here, with the run's threads: f32 is sgemm's
    peak; autocast (bf16 operands) is the faster of torch's bf16 GEMM and widening to f32, which
    any path may do. torch's bf16 mm depends on the layout and the CPU: without avx512_bf16 its
    row-major x row-major product runs at under 1 GFLOP/s while F.linear's transposed weight
    runs at a third of sgemm, so the bf16 rate is F.linear's at 1024^3 (bounded in time)."""
    import torch

    from benchmarks.kernels.roofline import _median_s, sgemm_peak_gflops

    torch.set_num_threads(threads)
    f32 = sgemm_peak_gflops()
    a, w = torch.randn(1024, 1024, dtype=torch.bfloat16), torch.randn(1024, 1024, dtype=torch.bfloat16)
    bf16 = 2 * 1024**3 / _median_s(lambda: torch.nn.functional.linear(a, w), 3) / 1e9
    return {"f32": f32, "autocast": max(f32, bf16), "bf16_linear": bf16}


def run_one(config: str, precision: str, path: str, args: argparse.Namespace, progress: Progress) -> dict:
    label = f"{config} {precision} x {path}"
    cmd = [sys.executable, str(STEP_SCRIPT), "--config", config, "--path", path, "--precision", precision,
           "--configs-file", str(args.configs_file)]
    for flag in ("batch", "seq", "iters", "warmups", "threads"):
        cmd += [f"--{flag}", str(getattr(args, flag))]
    if path == "eager":
        cmd.append("--count-flops")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as cache:
        cmd += ["--cache-dir", str(Path(cache) / "luminal")]
        outcome = runner.run(cmd, args.timeout, thread_env(args.threads, str(Path(cache) / "inductor")),
                             lambda stage: progress.update(label, stage))
    row = {**(outcome.result or {}), "path": path, "config": f"{config}/{precision}", "wall_s": time.monotonic() - start}
    row["error"] = outcome.error()
    row["other_cpu_pct"] = outcome.other_cpu_pct
    progress.advance(label, "ERROR" if row["error"] else "ok")
    return row


def compare_with_eager(rows: list[dict], peaks: dict[str, float]) -> None:
    """Fills loss_max_rel_diff (each step's loss against eager's), the ratios to eager and
    inductor and the GEMM floor, from the eager row of the same config and precision."""
    by_config: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_config.setdefault(row["config"], {})[row["path"]] = row
    for paths in by_config.values():
        eager, inductor = paths.get("eager") or {}, paths.get("inductor") or {}
        for row in paths.values():
            if eager.get("losses") and row.get("losses"):
                row["loss_max_rel_diff"] = max(
                    abs(a - b) / max(abs(b), 1e-12) for a, b in zip(row["losses"], eager["losses"])
                )
            for peer, column in ((eager, "vs_eager"), (inductor, "vs_inductor")):
                if peer.get("step_ms") and row.get("step_ms"):
                    row[column] = peer["step_ms"] / row["step_ms"]
            if eager.get("step_gflop"):
                row["step_gflop"] = eager["step_gflop"]
                row["gemm_peak_gflops"] = peaks[row["precision"]]
                row["gemm_floor_ms"] = 1000 * eager["step_gflop"] / peaks[row["precision"]]


def fmt(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def write_latest(rows: list[dict], run: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    columns = ["path", *[c for c in db.TRAIN_COLUMNS if c != "path"]]
    csv_path, md_path = out / "train_latest.csv", out / "train_latest.md"
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: db.encode(v) for k, v in r.items()} for r in rows)
    lines = [
        "# Training step: forward + backward + AdamW (medians)", "",
        f"Run {run['run_id']}, commit {run['git_commit']}, {run['cpu_model']}, {run['threads']} threads. "
        "Each path in its own process with empty caches; eager AdamW (foreach) in every path; dropout off. "
        "vs_eager / vs_inductor > 1: faster than that path. GEMM floor: one step's FLOPs (torch's count) / "
        f"the GEMM peak of the step's precision measured in this run (f32: sgemm, {run['f32_peak']}; autocast: the "
        f"faster of bf16 F.linear, {run['bf16_peak']}, and widening to f32).", "",
        "| config | path | step ms | tokens/s | vs eager | vs inductor | forward ms | backward ms | AdamW ms "
        "| GEMM floor ms | compile s | peak RSS MB | loss vs eager | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        error = (r.get("error") or "").strip().splitlines()[-1:] or [""]
        loss_diff = "–" if r.get("loss_max_rel_diff") is None else f"{r['loss_max_rel_diff']:.1e}"
        compile_s = fmt(r["compile_ms"] / 1000) if r.get("compile_ms") else "–"
        lines.append(
            f"| {r['config']} | {r['path']} | {fmt(r.get('step_ms'))} | {fmt(r.get('tokens_per_s'), 0)} "
            f"| {fmt(r.get('vs_eager'), 2)} | {fmt(r.get('vs_inductor'), 2)} | {fmt(r.get('forward_ms'))} "
            f"| {fmt(r.get('backward_ms'))} | {fmt(r.get('optimizer_ms'))} | {fmt(r.get('gemm_floor_ms'))} "
            f"| {compile_s} | {fmt(r.get('peak_rss_mb'), 0)} | {loss_diff} "
            f"| {error[0].replace('|', '/')[:200]} |"
        )
    md_path.write_text("\n".join(lines) + "\n")
    return [csv_path, md_path]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    conn = db.connect(args.db)
    run_id = new_run_id()
    keep = {k: getattr(args, k) for k in ("configs", "precisions", "paths", "batch", "seq", "iters", "warmups", "threads")}
    run = {"run_id": run_id, "mode": "train", **machine_info(args.threads), "args": json.dumps(keep)}
    db.insert_run(conn, run)
    peaks = gemm_peaks(args.threads)
    run["f32_peak"], run["bf16_peak"] = f"{peaks['f32']:.0f} GFLOP/s", f"{peaks['bf16_linear']:.0f} GFLOP/s"
    print(f"GEMM peaks: f32 {peaks['f32']:.0f} GFLOP/s, bf16 F.linear {peaks['bf16_linear']:.0f} GFLOP/s", file=sys.stderr)
    # eager first in each group: the others are compared with it.
    jobs = [(c, p, path) for c in args.configs for p in args.precisions
            for path in sorted(args.paths, key=lambda x: x != "eager")]
    progress = Progress(len(jobs))
    rows = []
    for config, precision, path in jobs:
        rows.append(run_one(config, precision, path, args, progress))
        if rows[-1]["error"]:
            print(f"{config} {precision} x {path}: {rows[-1]['error'][-300:]}", file=sys.stderr)
    compare_with_eager(rows, peaks)
    for row in rows:
        db.insert_train_result(conn, run_id, row)
    written = write_latest(rows, run, args.out / "train") + [dashboard.write(conn, args.out)]
    print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
