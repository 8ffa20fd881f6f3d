"""Times kernels for one or more impls (eager | inductor | luminal) in this process; one
`BENCH_RESULT` line per kernel and impl. The parent (run.py) restarts a worker that crashes,
skipping the kernel that killed it.

Per kernel: every impl is wrapped, and its first call is timed as compile time. Then warmups and
timed runs, each cut short by the time cap (at least 1 warmup and 3 runs are always done; the
result says when the cap cut runs). The impls take turns: the runs go in `ROUNDS` rounds, each
running a share of every impl's runs in turn, so drift of this shared machine hits them alike
(timing each impl over all kernels one after another put minutes between an impl's row and its
peers', docs/lessons.md 2026-11-28 afternoon).
For luminal, the program the backend returned to dynamo is also timed called directly
(`backend_call_us`): a call through torch.compile adds dynamo's own per-call Python (guards and
the frame's wrapper, 30-100 µs on a 2-core box whatever the backend), which dominates small kernels.
It takes its turns in the same rounds as the impls: timed after them, a load that came and went
on this shared machine in between made the direct call 8 ms against the compiled call's 64 µs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.kernels.kernels import all_kernels, traffic_bytes  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def wrap(impl: str, fn, threads: int, programs: list):
    """fn compiled for `impl`; for luminal, `programs` receives (program, its example inputs) of
    each graph the backend compiles."""
    if impl == "eager":
        return fn
    if impl == "inductor":
        return torch.compile(fn, dynamic=False, fullgraph=True)
    import luminal

    def backend(gm, example_inputs):
        program = luminal.luminal_backend(gm, example_inputs, options={"num_threads": threads})
        programs.append((program, list(example_inputs)))
        return program

    return torch.compile(fn, backend=backend, dynamic=False, fullgraph=True)


# Rounds the timed runs are split into; each round runs every impl's share in turn.
ROUNDS = 5


def first_call(fn, inputs) -> tuple:
    """(fn's output, ms of its first call: compile time for a compiled impl)."""
    start = time.perf_counter()
    output = fn(*inputs)
    return output, (time.perf_counter() - start) * 1000


def one_call_s(fn, inputs) -> float:
    """Seconds of one more call of fn: what its warmups and runs are sized from."""
    start = time.perf_counter()
    fn(*inputs)
    return time.perf_counter() - start


def too_slow_to_time(seconds: float, limit_s: float) -> str | None:
    """The error row's text for an impl whose one call took `seconds`, or None when it can be timed:
    its minimum runs would take the worker past its timeout, and its peers' rows with it."""
    return f"one call took {seconds:.0f} s, over --slow-call-s {limit_s:g}: not timed" if seconds > limit_s else None


def time_interleaved(fns: dict, call_s: dict, inputs, warmups: int, runs: int, cap_s: float) -> dict:
    """impl -> timing of fns (each called once already) timed in turns. Each impl gets `cap_s` of
    warmups and runs (a quarter for warmups), sized from the seconds of one of its calls, call_s[impl]."""
    counts = {}
    for impl in fns:
        one = call_s[impl]
        counts[impl] = (max(1, min(warmups, int(0.25 * cap_s / max(one, 1e-9)))),
                        max(3, min(runs, int(0.75 * cap_s / max(one, 1e-9)))))
    for impl, fn in fns.items():
        for _ in range(counts[impl][0]):
            fn(*inputs)
    samples = {impl: [] for impl in fns}
    for round_index in range(ROUNDS):
        for impl, fn in fns.items():
            n_runs = counts[impl][1]
            for _ in range(n_runs * (round_index + 1) // ROUNDS - n_runs * round_index // ROUNDS):
                start = time.perf_counter()
                fn(*inputs)
                samples[impl].append((time.perf_counter() - start) * 1e6)
    results = {}
    for impl in fns:
        n_warm, n_runs = counts[impl]
        result = {"latency_us": statistics.median(samples[impl]), "runs": n_runs, "warmups": n_warm,
                  "min_us": min(samples[impl]), "max_us": max(samples[impl])}
        if n_runs < runs or n_warm < warmups:
            result["note"] = f"time cap {cap_s:g}s: {n_runs}/{runs} runs, {n_warm}/{warmups} warmups"
        results[impl] = result
    return results


def check_output(actual: torch.Tensor, expected: torch.Tensor) -> str | None:
    """A fast wrong kernel is no result: say so when the output is not eager's (within dtype tolerance)."""
    tolerance = 1e-3 if expected.dtype == torch.float32 else 3e-2
    if actual.shape == expected.shape and torch.allclose(actual.float(), expected.float(), rtol=tolerance,
                                                         atol=tolerance, equal_nan=True):
        return None
    if actual.shape != expected.shape:
        return f"WRONG OUTPUT: shape {tuple(actual.shape)} != eager's {tuple(expected.shape)}"
    error = (actual.float() - expected.float()).abs().nan_to_num(float("inf")).max().item()
    return f"WRONG OUTPUT: max abs error {error:.3g} vs eager"


# The key under which luminal's program, called without dynamo, takes its turns with the impls.
DIRECT = "luminal:direct"


def direct_call(compiled: tuple):
    """A call of the one program luminal compiled with the arguments dynamo passed it (the
    kernel's inputs, the same tensors every call), ignoring the inputs the impls are called with."""
    program, example_inputs = compiled

    def call(*_):
        outputs = program(*example_inputs)
        return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs

    return call


def error_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:1000]


def kernel_rows(key: str, kernel, dtype: str, args: argparse.Namespace) -> dict:
    """impl -> its result row for one kernel: every impl compiled, checked against eager and timed
    in turns with the others (luminal's program called directly among them)."""
    rows = {impl: {"key": key, "impl": impl} for impl in args.impls}
    torch._dynamo.reset()  # each kernel compiles alone, without guards piled up by earlier ones
    try:
        inputs = kernel.make_inputs(DTYPES[dtype], torch.Generator().manual_seed(0))
        expected = kernel.fn(*inputs)
        fns, call_s, outputs, programs = {}, {}, {}, {}
        for impl in args.impls:  # an impl that cannot compile the kernel is an error row; the others go on
            programs[impl] = []
            try:
                fn = wrap(impl, kernel.fn, args.threads, programs[impl])
                outputs[impl], rows[impl]["compile_ms"] = first_call(fn, inputs)
            except Exception as exc:  # noqa: BLE001
                rows[impl]["error"] = error_text(exc)
                continue
            call_s[impl] = one_call_s(fn, inputs)
            slow = too_slow_to_time(call_s[impl], args.slow_call_s)
            if slow:
                rows[impl]["error"] = slow
            else:
                fns[impl] = fn
        mismatches = {impl: check_output(outputs[impl], expected) for impl in fns}
        direct_note = None
        if "luminal" in fns and len(programs["luminal"]) == 1 and not mismatches["luminal"]:
            direct = direct_call(programs["luminal"][0])
            output = direct()
            direct_note = check_output(output, expected) if isinstance(output, torch.Tensor) else "not one tensor"
            if not direct_note:
                fns[DIRECT], call_s[DIRECT] = direct, one_call_s(direct, inputs)
        timings = time_interleaved(fns, call_s, inputs, args.warmups, args.runs, args.time_cap)
        for impl in args.impls:
            if impl not in timings:
                continue
            row = rows[impl]
            row.update(timings[impl], bytes=traffic_bytes(kernel, inputs, outputs[impl]), flops=kernel.flops)
            if mismatches[impl]:
                row["note"] = "; ".join(filter(None, [row.get("note"), mismatches[impl]]))
        if DIRECT in timings:
            rows["luminal"]["backend_call_us"] = timings[DIRECT]["latency_us"]
        elif direct_note:
            rows["luminal"]["backend_call_note"] = f"direct call: {direct_note}"
    except Exception as exc:  # noqa: BLE001 - an unsupported kernel is an error row, the worker goes on
        for row in rows.values():
            row.setdefault("error", error_text(exc))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impls", nargs="+", choices=["eager", "inductor", "luminal"], required=True)
    parser.add_argument("--keys", nargs="+", required=True, help="kernel keys: <kernel_id>/<shape>/<dtype>")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmups", type=int, default=50)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--time-cap", type=float, default=3.0, help="seconds of warmups + runs per kernel and impl")
    parser.add_argument("--slow-call-s", type=float, default=20.0,
                        help="an impl whose one call takes longer is an error row, not timed")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    # nonzero and x[mask] stay in the graph (for inductor and luminal alike) instead of breaking it.
    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    kernels = {k.key(d): (k, d) for k in all_kernels() for d in DTYPES}
    for key in args.keys:
        print(f"BENCH_STAGE {key}", file=sys.stderr, flush=True)
        kernel, dtype = kernels[key]
        rows = kernel_rows(key, kernel, dtype, args)
        for row in rows.values():
            print("BENCH_RESULT " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
