"""Kernel bench: primitives at canonical shapes, eager vs inductor vs luminal, against the machine's
measured roofline. Writes benchmarks/results/kernels_latest.csv (leaderboard columns + extras) and
kernels_latest.md.

    python benchmarks/kernels/run.py            # full: 50 warmups, 200 runs, 3 s cap per kernel
    python benchmarks/kernels/run.py --quick    # smoke: 5 warmups, 20 runs, 0.5 s cap
"""

from __future__ import annotations

import argparse
import csv
import math
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.common import runner  # noqa: E402
from benchmarks.common.machine import cpu_model, machine_info  # noqa: E402
from benchmarks.common.progress import Progress  # noqa: E402
from benchmarks.kernels import roofline  # noqa: E402
from benchmarks.kernels.kernels import all_kernels  # noqa: E402

IMPLS = ("eager", "inductor", "luminal")
DTYPES = ("f32", "bf16")
WORKER = Path(__file__).with_name("worker.py")
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
IMPL_LANG = {"eager": "aten", "inductor": "inductor-cpp", "luminal": "luminal-cpp"}
LEADERBOARD = ["device_id", "kernel_id", "dtype", "input_shape", "batch_size", "impl_lang", "latency_us",
               "driver_version", "toolchain", "git_sha", "submitter"]
EXTRA = ["impl", "gbps", "gflops", "pct_roofline", "vs_eager", "vs_inductor", "error",
         "compile_ms", "runs", "warmups", "note", "backend_call_us"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--kernels", nargs="+", help="kernel ids to keep (default: all)")
    parser.add_argument("--quick", action="store_true", help="5 warmups, 20 runs, 0.5 s cap: smoke tests")
    parser.add_argument("--warmups", type=int, default=50)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--time-cap", type=float, default=3.0, help="seconds of warmups + runs per kernel and impl")
    parser.add_argument("--kernel-timeout", type=float, default=300,
                        help="kill a worker stuck on one kernel this long per impl")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                        help="before each impl, wait up to this long for other processes to go quiet")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.warmups, args.runs, args.time_cap = 5, 20, 0.5
    known = sorted({k.kernel_id for k in all_kernels()})
    unknown = set(args.kernels or []) - set(known)
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(sorted(unknown))}; valid kernels: {', '.join(known)}")
    return args


def run_kernels(keys: list[str], args: argparse.Namespace, progress: Progress) -> tuple[dict, float | None]:
    """(impl -> key -> worker result, other processes' CPU % meanwhile). One worker times every
    impl of a kernel in turns (worker.py). A worker that dies or hangs costs the kernel it was on
    an error row per impl, then a new worker carries on with the kernels after it."""
    results: dict[str, dict[str, dict]] = {impl: {} for impl in args.impls}
    remaining = list(keys)
    busy = wall = 0.0
    if args.wait_idle > 0:
        progress.update("waiting for the machine to go quiet")
        runner.wait_until_quiet(args.wait_idle)
    while remaining:
        cmd = [sys.executable, str(WORKER), "--impls", *args.impls, "--threads", str(args.threads), "--warmups",
               str(args.warmups), "--runs", str(args.runs), "--time-cap", str(args.time_cap), "--keys", *remaining]
        done_before = len(keys) - len(remaining)
        started = [0]  # kernels this worker has begun; its results only arrive when it exits

        def on_stage(key: str) -> None:
            progress.done = done_before + started[0]
            started[0] += 1
            progress.update(key)

        outcome = runner.run(cmd, timeout=float("inf"), env={"OMP_NUM_THREADS": str(args.threads)},
                             on_stage=on_stage, stage_timeout=args.kernel_timeout * len(args.impls))
        for result in outcome.results:
            results[result["impl"]][result["key"]] = result
        if outcome.other_cpu_pct is not None:
            busy += outcome.other_cpu_pct * outcome.wall_s
            wall += outcome.wall_s
        remaining = [k for k in remaining if not all(k in results[impl] for impl in args.impls)]
        if remaining:  # the worker died or hung: blame the kernel it was on
            dead = outcome.last_stage if outcome.last_stage in remaining else remaining[0]
            for impl in args.impls:
                results[impl].setdefault(dead, {"key": dead, "impl": impl,
                                                "error": outcome.error() or "worker exited early"})
            remaining.remove(dead)
    progress.done = len(keys)
    return results, (busy / wall if wall else None)


def ratio(base: dict | None, row: dict) -> float | None:
    if base and base.get("latency_us") and row.get("latency_us"):
        return base["latency_us"] / row["latency_us"]
    return None


def build_rows(measured: dict[str, dict[str, dict]], roof: dict[str, float], info: dict) -> list[dict]:
    device = f"cpu:{cpu_model()}:{info['cores']}c".replace(",", " ")
    rows = []
    for kernel in all_kernels():
        for dtype in DTYPES:
            key = kernel.key(dtype)
            for impl in IMPLS:
                result = measured.get(impl, {}).get(key)
                if result is None:
                    continue
                row = {
                    "device_id": device, "kernel_id": kernel.kernel_id, "dtype": dtype, "input_shape": kernel.shape_str,
                    "batch_size": kernel.shape[0], "impl_lang": IMPL_LANG[impl], "driver_version": platform.release(),
                    "toolchain": f"torch {torch.__version__}", "git_sha": info["git_commit"],
                    "submitter": "benchmarks/kernels/run.py", "impl": impl, "error": result.get("error"),
                    "note": "; ".join(filter(None, [result.get("note"), result.get("backend_call_note")])) or None,
                    "backend_call_us": _round(result.get("backend_call_us")),
                }
                if result.get("latency_us"):
                    seconds = result["latency_us"] / 1e6
                    # Roofline time: the larger of moving the bytes at copy bandwidth and doing the
                    # flops at the GEMM peak of the kernel's dtype (bf16's is its own where the CPU
                    # multiplies bf16 pairs faster than f32, as a Zen 4 or AMX Xeon does).
                    peak = roofline.gemm_peak_gflops(roof, dtype)
                    bound = max(result["bytes"] / (roof["copy_gbps"] * 1e9), result["flops"] / (peak * 1e9))
                    row.update(
                        latency_us=round(result["latency_us"], 3), gbps=round(result["bytes"] / seconds / 1e9, 3),
                        gflops=round(result["flops"] / seconds / 1e9, 3) if result["flops"] else None,
                        pct_roofline=round(100 * bound / seconds, 2), compile_ms=round(result["compile_ms"], 1),
                        runs=result["runs"], warmups=result["warmups"],
                        vs_eager=_round(ratio(measured.get("eager", {}).get(key), result)),
                        vs_inductor=_round(ratio(measured.get("inductor", {}).get(key), result)),
                    )
                rows.append(row)
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, LEADERBOARD + EXTRA, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def markdown(rows: list[dict], roof: dict[str, float], info: dict, args: argparse.Namespace,
             other_cpu: float | None) -> str:
    def us(row):
        if row is None:
            return "–"
        return "ERR" if row.get("error") else f"{row['latency_us']:,.1f}"

    def x(value):
        return "–" if value is None else f"{value:.2f}x"

    lines = [
        "# Kernels: median latency (µs), eager vs inductor vs luminal", "",
        f"commit `{info['git_commit']}` · {info['cpu_model']} · {info['cores']} cores · torch {info['torch_version']} · "
        f"{args.threads} threads · {args.warmups} warmups + {args.runs} runs per kernel, capped at {args.time_cap:g} s "
        "(the notes column says where the cap cut runs).", "",
        f"Roofline measured in this run: copy bandwidth **{roof['copy_gbps']:.1f} GB/s**, "
        f"f32 GEMM peak **{roof['sgemm_gflops']:.1f} GFLOP/s**, bf16 GEMM peak "
        f"**{roofline.gemm_peak_gflops(roof, 'bf16'):.1f} GFLOP/s** (torch's bf16 F.linear at 1024^3, or sgemm's "
        "where that is slower). `% roof` = roofline time / latency (roofline time = max(bytes / bandwidth, "
        "flops / the peak of the row's dtype)). Speedups: > 1 = luminal faster.", "",
        "`luminal call µs`: the program luminal's backend returned to dynamo, called directly with the "
        "same inputs: luminal's own share of a call. Every compiled column also pays dynamo's per-call Python "
        "(guards, the frame's wrapper), which no backend can skip and which dominates kernels under ~100 µs "
        "here (docs/lessons.md, 2026-11-28).", "",
        "The impls take turns within each kernel (five rounds of each one's runs), so the machine's drift "
        "hits them alike. Other processes' CPU meanwhile (% of the machine; above a few %, latencies are "
        f"inflated): {'–' if other_cpu is None else f'{other_cpu:.0f}%'}.", "",
    ]
    grouped: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        grouped.setdefault((row["kernel_id"], row["input_shape"], row["dtype"]), {})[row["impl"]] = row
    luminal_ok = [g["luminal"] for g in grouped.values() if "luminal" in g and not g["luminal"].get("error")]
    luminal_err = [g["luminal"] for g in grouped.values() if "luminal" in g and g["luminal"].get("error")]
    speedups = [r["vs_eager"] for r in luminal_ok if r.get("vs_eager")]
    if luminal_ok or luminal_err:
        geo = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None
        lines += [f"luminal: {len(luminal_ok)} kernels ran, {len(luminal_err)} failed; geometric-mean speedup vs eager "
                  f"over the ones that ran: {x(geo)}.", ""]
    lines += ["| kernel | shape | dtype | eager µs | inductor µs | luminal µs | luminal call µs | luminal vs eager "
              "| luminal vs inductor | eager % roof | inductor % roof | luminal % roof | notes |", "|" + "---|" * 13]
    for (kernel, shape, dtype), impls in grouped.items():
        e, i, l = (impls.get(n) for n in IMPLS)
        notes = "; ".join(f"{n}: {(r.get('error') or r.get('note'))}" for n, r in impls.items()
                          if r.get("error") or r.get("note"))
        notes = notes.replace("|", "\\|").replace("\n", " ")[:300]
        pct = [f"{r['pct_roofline']:.1f}" if r and r.get("pct_roofline") is not None else "–" for r in (e, i, l)]
        call = f"{l['backend_call_us']:,.1f}" if l and l.get("backend_call_us") else "–"
        lines.append(f"| {kernel} | {shape} | {dtype} | {us(e)} | {us(i)} | {us(l)} | {call} | "
                     f"{x(l and l.get('vs_eager'))} | "
                     f"{x(l and l.get('vs_inductor'))} | {' | '.join(pct)} | {notes} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    info = machine_info(args.threads)
    print("measuring the roofline (copy bandwidth, sgemm and bf16 GEMM peaks)...", file=sys.stderr)
    roof = roofline.measure()
    print(f"copy {roof['copy_gbps']:.1f} GB/s, sgemm {roof['sgemm_gflops']:.1f} GFLOP/s, "
          f"bf16 GEMM {roof['bf16_gemm_gflops']:.1f} GFLOP/s", file=sys.stderr)
    keys = [k.key(d) for k in all_kernels() for d in args.dtypes if not args.kernels or k.kernel_id in args.kernels]
    progress = Progress(len(keys))
    # Impls take turns within each kernel, never side by side: each gets both cores to itself.
    measured, other_cpu = run_kernels(keys, args, progress)
    progress.update("done")
    rows = build_rows(measured, roof, info)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "kernels_latest.csv")
    (args.out / "kernels_latest.md").write_text(markdown(rows, roof, info, args, other_cpu))
    print(f"wrote {args.out / 'kernels_latest.csv'}, {args.out / 'kernels_latest.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
