"""Every path's TTFT/TPOT timed in one process, interleaved: the ratios to trust on a noisy machine.

Each path's own subprocess (measure.py) gives its compile time, peak RSS, tokens and copied bytes,
but on a shared VM a process's times move by 20-40% with its luck in memory and cores, and the
machine drifts between the paths' runs, so two paths' medians from two processes can disagree by
more than the difference between them. Here the paths are compiled side by side on one model and
one StaticCache, then each iteration (measure.py's 1-3, or an encoder forward) runs every path
once in turn, the order rotating from one iteration to the next: whatever slows the process or the
machine slows every path alike.

    python benchmarks/ttft/interleaved.py --config qwen3-small-f32 --paths eager inductor luminal

Prints one `BENCH_RESULT {"paths": {path: {...}}}` line: per path `<metric>_interleaved_ms` (and
`_mean_ms`, `_min_ms`, `_max_ms`, `_samples`) for ttft_seq, ttft_batched and tpot, or `error`.
"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.common.stats import summarize  # noqa: E402
from benchmarks.kernels.roofline import half_gemm_peak_gflops, read_bandwidth_gbps, sgemm_peak_gflops  # noqa: E402
from benchmarks.ttft.measure import (  # noqa: E402
    Prepare,
    Session,
    argument_parser,
    first_call_ms,
    iteration_stage,
    run_settings,
    stage,
)

# Between two paths' turns: the previous path's thread pools (torch's OpenMP team spins for a
# while after its last parallel region) go quiet before the next path starts, so no path is
# timed against the one before it fighting for the two cores.
SETTLE_S = 0.1
SUFFIX = "_interleaved"  # on each timed metric's name, so the rows keep the per-process times too
METRICS = ("ttft_seq", "ttft_batched", "tpot")


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def first_calls(session: Session, fn: Any, sequential_prefill: bool) -> bool:
    """The untimed first call of each shape; whether the batched shape runs (a path that cannot
    still times its sequential prefill and decode, as in measure.py)."""
    if session.config.is_encoder:
        session.encode(fn)
        return True
    first_call_ms(session, fn, batched=False)
    try:
        first_call_ms(session, fn, batched=True)
        return True
    except Exception:  # noqa: BLE001 - measure.py reports the reason in the path's own row
        if not sequential_prefill:
            raise
        return False


def timed_iteration(session: Session, fn: Any, batched_ok: bool) -> dict[str, float]:
    """One iteration's samples by metric."""
    if session.config.is_encoder:
        return {"ttft_batched": session.encode(fn)[0]}
    ttft, steps, _, batched = session.iteration(fn, batched_ok)
    samples = {"tpot": sum(steps) / len(steps)}
    if ttft is not None:
        samples["ttft_seq"] = ttft
    if batched is not None:
        samples["ttft_batched"] = batched[0]
    return samples


def measure_interleaved(prepares: dict[str, Prepare], args) -> dict[str, dict[str, Any]]:
    config, iters, warmups, decode_tokens = run_settings(args)
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    stage("build model")
    session = Session(config, decode_tokens)
    if not config.is_encoder:
        session.eager_init()
    results: dict[str, dict[str, Any]] = {path: {} for path in prepares}
    fns, batched_ok = {}, {}
    for path, prepare in prepares.items():
        stage(f"{path}: first calls")
        try:
            fns[path] = prepare(session.model, args)
            batched_ok[path] = first_calls(session, fns[path], config.sequential_prefill)
        except Exception as exc:  # noqa: BLE001 - one path's failure is its row's, the others still run
            traceback.print_exc()
            results[path]["error"] = error_text(exc)
            fns.pop(path, None)
    samples: dict[str, dict[str, list[float]]] = {path: {m: [] for m in METRICS} for path in fns}
    peaks: list[float] = []  # the f32 GEMM peak, sampled once per timed round
    half_peaks: list[float] = []  # a bf16/f16 config's GEMM peak, likewise
    reads: list[float] = []  # the read-only bandwidth, likewise (a decoder's TPOT floor)
    order = list(fns)
    for i in range(warmups + iters):
        stage(iteration_stage(i, warmups, iters))
        for path in order[i % len(order):] + order[:i % len(order)]:
            if "error" in results[path]:
                continue
            time.sleep(SETTLE_S)
            try:
                measured = timed_iteration(session, fns[path], batched_ok[path])
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc()
                results[path]["error"] = error_text(exc)
                continue
            if i >= warmups:
                for metric, value in measured.items():
                    samples[path][metric].append(value)
        if i >= warmups and not config.is_encoder:
            peaks.append(sgemm_peak_gflops())
            if config.dtype in ("bf16", "f16"):
                half_peaks.append(half_gemm_peak_gflops(config.torch_dtype, peaks[-1]))
            reads.append(read_bandwidth_gbps())
    for path, by_metric in samples.items():
        if "error" not in results[path]:
            for metric, values in by_metric.items():
                results[path].update(summarize(metric + SUFFIX, values))
            if peaks:
                results[path]["sgemm_gflops_interleaved"] = statistics.median(peaks)
            if half_peaks:
                results[path]["half_gemm_gflops_interleaved"] = statistics.median(half_peaks)
            if reads:
                results[path]["read_gbps_interleaved"] = statistics.median(reads)
    return results


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--paths", nargs="+", required=True, help="path modules under benchmarks/ttft/paths")
    args = parser.parse_args()
    prepares = {path: importlib.import_module(f"benchmarks.ttft.paths.{path}").prepare for path in args.paths}
    status = 0
    try:
        result = {"paths": measure_interleaved(prepares, args)}
    except Exception as exc:  # noqa: BLE001 - building the model or cache failed: every path's error
        traceback.print_exc()
        result = {"error": error_text(exc)}
        status = 1
    print("BENCH_RESULT " + json.dumps(result), flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
