"""TTFT/TPOT orchestrator: runs configs x paths, each path in its own subprocess, stores every
outcome (failures and timeouts as error rows) in SQLite, then writes the latest CSV/MD/PNG and the
HTML dashboard.

    python benchmarks/ttft/run.py --configs llama-membound-f32 --iters 10
"""

from __future__ import annotations

import argparse
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
from benchmarks.ttft import render  # noqa: E402
from benchmarks.ttft.configs import CONFIGS_FILE, ConfigError, load_configs, select  # noqa: E402

PATHS_DIR = Path(__file__).with_name("paths")
PATHS = ("eager", "inductor", "luminal", "luminal_search")
DEFAULT_PATHS = ("eager", "inductor", "luminal")  # luminal_search only when asked for
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def check_paths(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in PATHS]
    if unknown:
        raise ConfigError(f"unknown path(s) {', '.join(unknown)}; valid paths: {', '.join(PATHS)}")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["llama-membound-f32"], help="config names (configs.toml)")
    parser.add_argument("--paths", nargs="+", default=list(DEFAULT_PATHS),
                        help=f"any of {', '.join(PATHS)} (default: {' '.join(DEFAULT_PATHS)})")
    parser.add_argument("--iters", type=int, help="measured iterations (default: each config's, 10)")
    parser.add_argument("--warmups", type=int, help="untimed iterations first (default: each config's, 2)")
    parser.add_argument("--decode-tokens", type=int, help="greedy decode steps per iteration (default: config's)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per path subprocess before it is killed")
    parser.add_argument("--threads", type=int, default=2, help="torch and runtime threads in every path")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each path, wait up to this long for other processes to go quiet (shared machines)")
    parser.add_argument("--configs-file", type=Path, default=CONFIGS_FILE)
    parser.add_argument("--db", type=Path, default=RESULTS_DIR / "bench.db")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="where the latest CSV/MD/PNG/HTML go")
    parser.add_argument("--render-only", action="store_true", help="re-render outputs from the db, run nothing")
    parser.add_argument("--no-interleaved", dest="interleaved", action="store_false",
                        help="skip the run that times every path of a config in one process (interleaved.py)")
    args = parser.parse_args(argv)
    try:
        args.config_list = select(args.configs, load_configs(args.configs_file))
        check_paths(args.paths)
    except ConfigError as exc:
        parser.error(str(exc))
    if args.iters is not None and args.iters < 1:
        parser.error("--iters must be >= 1")
    return args


def path_command(path: str, config: str, args: argparse.Namespace, extra: list[str] = ()) -> list[str]:
    cmd = [sys.executable, str(PATHS_DIR / f"{path}.py"), "--config", config, "--threads", str(args.threads)]
    cmd += ["--configs-file", str(args.configs_file)]
    for flag in ("iters", "warmups", "decode_tokens"):
        value = getattr(args, flag, None)
        if value is not None:
            cmd += [f"--{flag.replace('_', '-')}", str(value)]
    return cmd + list(extra)


def thread_env(threads: int, inductor_cache: str) -> dict[str, str]:
    # Every BLAS/OpenMP pool gets the same thread count as torch, so no path oversubscribes 2 cores.
    return {"OMP_NUM_THREADS": str(threads), "TORCHINDUCTOR_CACHE_DIR": inductor_cache}


def run_one(path: str, config: str, args: argparse.Namespace, progress: Progress) -> dict:
    label = f"{config} x {path}"
    if args.wait_idle > 0:
        progress.update(label, "waiting for the machine to go quiet")
        runner.wait_until_quiet(args.wait_idle)
    start = time.monotonic()
    # Fresh inductor and luminal caches per subprocess: compile_ms is always a cold compile, for
    # both compilers alike, comparable across runs.
    with tempfile.TemporaryDirectory(prefix="bench-caches-") as cache:
        outcome = runner.run(
            path_command(path, config, args, ["--cache-dir", str(Path(cache) / "luminal")]),
            args.timeout,
            thread_env(args.threads, str(Path(cache) / "inductor")),
            lambda stage: progress.update(label, stage),
        )
    row = {**(outcome.result or {}), "path": path, "config": config, "wall_s": time.monotonic() - start}
    row["error"] = outcome.error()
    row["other_cpu_pct"] = outcome.other_cpu_pct
    progress.advance(label, "ERROR" if row["error"] else "ok")
    return row


def run_interleaved(config: str, args: argparse.Namespace, cache: str, progress: Progress) -> dict:
    """path -> its interleaved metrics (or error) for one config, from one subprocess timing every
    path in turn. The caches persist across the run's configs: its compile time is not reported."""
    label = f"{config} x interleaved"
    if args.wait_idle > 0:
        runner.wait_until_quiet(args.wait_idle)
    command = [sys.executable, str(Path(__file__).with_name("interleaved.py")), "--config", config,
               "--threads", str(args.threads), "--configs-file", str(args.configs_file), "--cache-dir",
               str(Path(cache) / "luminal"), "--paths", *args.paths]
    for flag in ("iters", "warmups", "decode_tokens"):
        if getattr(args, flag, None) is not None:
            command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    outcome = runner.run(command, args.timeout * len(args.paths), thread_env(args.threads, str(Path(cache) / "inductor")),
                         lambda stage: progress.update(label, stage))
    error = outcome.error()
    progress.advance(label, "ERROR" if error else "ok")
    if error:
        return {path: {"error": error} for path in args.paths}
    return outcome.result["paths"]


def merge_interleaved(row: dict, interleaved: dict) -> dict:
    """The path's row with its interleaved metrics; an interleaved failure becomes a note (the
    path's own measurement stands)."""
    if interleaved.get("error"):
        note = f"interleaved timing failed: {interleaved['error']}"
        return {**row, "note": f"{row['note']}; {note}" if row.get("note") else note}
    return {**row, **interleaved}


def measure_bandwidths(args: argparse.Namespace) -> dict[str, float]:
    """The machine's copy and read-only bandwidths and its f32 GEMM peak with the run's thread
    count: the decode floors' and the prefill floor's denominators."""
    import torch

    from benchmarks.kernels.roofline import copy_bandwidth_gbps, read_bandwidth_gbps, sgemm_peak_gflops

    if args.wait_idle > 0:
        runner.wait_until_quiet(args.wait_idle)
    torch.set_num_threads(args.threads)
    measured = {"copy_gbps": copy_bandwidth_gbps(), "read_gbps": read_bandwidth_gbps(),
                "sgemm_gflops": sgemm_peak_gflops()}
    print(f"copy bandwidth {measured['copy_gbps']:.1f} GB/s, read {measured['read_gbps']:.1f} GB/s, "
          f"f32 GEMM peak {measured['sgemm_gflops']:.0f} GFLOP/s", file=sys.stderr)
    return measured


def measure_half_gemm_peaks(args: argparse.Namespace, sgemm_gflops: float) -> dict[str, float]:
    """The GEMM peak of each half dtype among the run's configs ("bf16", "f16"), the denominator
    of their compute floors (half_gemm_gflops): a bf16 prefill's GEMMs run on bf16 dot products
    where the CPU has them, at twice sgemm's rate or more, so f32's peak made its floor say
    nothing."""
    from benchmarks.kernels.roofline import half_gemm_peak_gflops

    peaks = {}
    for config in args.config_list:
        if config.dtype in ("bf16", "f16") and config.dtype not in peaks:
            peaks[config.dtype] = half_gemm_peak_gflops(config.torch_dtype, sgemm_gflops)
            print(f"{config.dtype} GEMM peak {peaks[config.dtype]:.0f} GFLOP/s", file=sys.stderr)
    return peaks


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    conn = db.connect(args.db)
    if not args.render_only:
        run_id = new_run_id()
        db.insert_run(conn, {"run_id": run_id, "mode": "ttft", **machine_info(args.threads), "args": _args_json(args)})
        jobs = [(c.name, p) for c in args.config_list for p in args.paths]
        bandwidths = measure_bandwidths(args)
        half_peaks = measure_half_gemm_peaks(args, bandwidths["sgemm_gflops"])
        interleave = args.interleaved and len(args.paths) > 1
        progress = Progress(len(jobs) + (len(args.config_list) if interleave else 0))
        with tempfile.TemporaryDirectory(prefix="bench-interleaved-caches-") as interleaved_cache:
            for config in args.config_list:
                rows = []
                for path in args.paths:
                    row = {**run_one(path, config.name, args, progress), **bandwidths}
                    if config.dtype in half_peaks:
                        row["half_gemm_gflops"] = half_peaks[config.dtype]
                    rows.append(row)
                    if row["error"]:
                        print(f"{config.name} x {path}: {row['error'][:300]}", file=sys.stderr)
                    if (row["other_cpu_pct"] or 0) > 10:
                        print(f"warning: other processes used {row['other_cpu_pct']:.0f}% of the CPU during "
                              f"{config.name} x {path}; its times are inflated", file=sys.stderr)
                if interleave:
                    interleaved = run_interleaved(config.name, args, interleaved_cache, progress)
                    rows = [merge_interleaved(row, interleaved.get(row["path"], {})) for row in rows]
                for row in rows:
                    db.insert_result(conn, run_id, row)  # stored per config: a later crash keeps earlier rows
        db.mark_token_agreement(conn, run_id)
    written = render.write_latest(conn, args.out)
    written.append(dashboard.write(conn, args.out))
    print("wrote " + ", ".join(str(p) for p in written if p), file=sys.stderr)
    return 0


def _args_json(args: argparse.Namespace) -> str:
    keep = ("configs", "paths", "iters", "warmups", "decode_tokens", "timeout", "threads", "wait_idle")
    return json.dumps({k: getattr(args, k) for k in keep})


if __name__ == "__main__":
    sys.exit(main())
