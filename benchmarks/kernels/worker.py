"""Times kernels for one impl (eager | inductor | luminal) in this process; one `BENCH_RESULT` line
per kernel. The parent (run.py) restarts a worker that crashes, skipping the kernel that killed it.

Per kernel: the first call is timed as compile time; then warmups and timed runs, each cut short by
the time cap (at least 1 warmup and 3 runs are always done; the result says when the cap cut runs).
For luminal, the program the backend returned to dynamo is also timed called directly
(`backend_call_us`): a call through torch.compile adds dynamo's own per-call Python (guards and
the frame's wrapper, 30-100 µs on a 2-core box whatever the backend), which dominates small kernels.
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
# nonzero and x[mask] stay in the graph (for inductor and luminal alike) instead of breaking it.
torch._dynamo.config.capture_dynamic_output_shape_ops = True


def wrap(impl: str, fn, threads: int, programs: list):
    """fn compiled for `impl`; for luminal, `programs` receives (program, its example inputs) of
    each graph the backend compiles."""
    torch._dynamo.reset()  # each kernel compiles alone, without guards piled up by earlier ones
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


def time_kernel(fn, inputs, warmups: int, runs: int, cap_s: float) -> dict:
    start = time.perf_counter()
    output = fn(*inputs)
    compile_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    fn(*inputs)
    one = time.perf_counter() - start
    # A quarter of the cap for warmups, the rest for timed runs.
    n_warm = max(1, min(warmups, int(0.25 * cap_s / max(one, 1e-9))))
    n_runs = max(3, min(runs, int(0.75 * cap_s / max(one, 1e-9))))
    for _ in range(n_warm):
        fn(*inputs)
    samples = []
    for _ in range(n_runs):
        start = time.perf_counter()
        fn(*inputs)
        samples.append((time.perf_counter() - start) * 1e6)
    result = {"latency_us": statistics.median(samples), "compile_ms": compile_ms, "runs": n_runs,
              "warmups": n_warm, "min_us": min(samples), "max_us": max(samples)}
    if n_runs < runs or n_warm < warmups:
        result["note"] = f"time cap {cap_s:g}s: {n_runs}/{runs} runs, {n_warm}/{warmups} warmups"
    return result, output


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


def backend_call(compiled: tuple, expected: torch.Tensor, args: argparse.Namespace) -> dict:
    """The median µs of calling the one program luminal compiled, with the arguments dynamo
    passed it (the kernel's inputs, the same tensors every call), or a note when its output is
    not eager's."""
    program, example_inputs = compiled
    timing, outputs = time_kernel(lambda: program(*example_inputs), (), args.warmups, args.runs, args.time_cap)
    output = outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs
    mismatch = check_output(output, expected) if isinstance(output, torch.Tensor) else "not one tensor"
    if mismatch:
        return {"backend_call_note": f"direct call: {mismatch}"}
    return {"backend_call_us": timing["latency_us"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=["eager", "inductor", "luminal"], required=True)
    parser.add_argument("--keys", nargs="+", required=True, help="kernel keys: <kernel_id>/<shape>/<dtype>")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmups", type=int, default=50)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--time-cap", type=float, default=3.0, help="seconds of warmups + runs per kernel")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    kernels = {k.key(d): (k, d) for k in all_kernels() for d in DTYPES}
    for key in args.keys:
        print(f"BENCH_STAGE {key}", file=sys.stderr, flush=True)
        kernel, dtype = kernels[key]
        row = {"key": key, "impl": args.impl}
        try:
            inputs = kernel.make_inputs(DTYPES[dtype], torch.Generator().manual_seed(0))
            programs = []
            timing, output = time_kernel(wrap(args.impl, kernel.fn, args.threads, programs), inputs, args.warmups,
                                         args.runs, args.time_cap)
            row.update(timing, bytes=traffic_bytes(kernel, inputs, output), flops=kernel.flops)
            expected = kernel.fn(*inputs)
            mismatch = check_output(output, expected)
            if len(programs) == 1 and not mismatch:
                row.update(backend_call(programs[0], expected, args))
            if mismatch:
                row["note"] = "; ".join(filter(None, [row.get("note"), mismatch]))
        except Exception as exc:  # noqa: BLE001 - an unsupported kernel is an error row, the worker goes on
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:1000]
        print("BENCH_RESULT " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
