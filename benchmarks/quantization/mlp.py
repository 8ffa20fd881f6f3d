"""A decode step's MLP through torchao's quantized Linears: eager, inductor and luminal, one
subprocess per torchao config, all in one run. The 2048->5632->2048 SiLU MLP at batch 1 (23M
weights); medians of `--calls` calls after warmups; the bytes floor is the weights' stored bytes
over the read-only bandwidth measured at the start of the run.

    python benchmarks/quantization/mlp.py [--dtype bfloat16]   # writes benchmarks/results/quantization/mlp_<dtype>_latest.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CONFIGS = ("int8", "int4", "int8dyn")
BACKENDS = ("eager", "inductor", "luminal")


def measure(config: str, dtype: str, calls: int, threads: int) -> dict:
    """One config's MLP in this process: {backend: median ms}, max errors against eager, bytes."""
    import torch

    from benchmarks.ttft.configs import quantization_config
    from benchmarks.ttft.measure import stored_bytes

    torch.set_num_threads(threads)
    torch.manual_seed(0)

    class MLP(torch.nn.Module):
        def __init__(self, hidden: int = 2048, ffn: int = 5632) -> None:
            super().__init__()
            self.gate = torch.nn.Linear(hidden, ffn, bias=False)
            self.up = torch.nn.Linear(hidden, ffn, bias=False)
            self.down = torch.nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))

    from torchao.quantization import quantize_

    model = MLP().eval().to(getattr(torch, dtype))
    quantize_(model, quantization_config(config))
    x = torch.randn(1, 2048, dtype=model.gate.weight.dtype)
    result = {"weight_bytes": sum(stored_bytes(p) for p in model.parameters()), "ms": {}, "error": {}}
    with torch.no_grad():
        expected = model(x)
        for backend in BACKENDS:
            torch._dynamo.reset()
            fn = model if backend == "eager" else torch.compile(model, backend=backend, dynamic=False)
            out = fn(x)
            for _ in range(3):
                fn(x)
            samples = []
            for _ in range(calls):
                start = time.perf_counter()
                fn(x)
                samples.append((time.perf_counter() - start) * 1e3)
            result["ms"][backend] = statistics.median(samples)
            result["error"][backend] = (out.float() - expected.float()).abs().max().item()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", choices=CONFIGS, help="measure one config in this process (internal)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "quantization")
    args = parser.parse_args()
    if args.config:
        print("MLP_RESULT " + json.dumps(measure(args.config, args.dtype, args.calls, args.threads)))
        return 0

    import torch

    from benchmarks.common.machine import machine_info
    from benchmarks.kernels.roofline import read_bandwidth_gbps

    torch.set_num_threads(args.threads)
    read_gbps = read_bandwidth_gbps()
    rows = {}
    for config in CONFIGS:
        proc = subprocess.run([sys.executable, __file__, "--config", config, "--dtype", args.dtype, "--calls",
                               str(args.calls), "--threads", str(args.threads)], capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("MLP_RESULT ")]
        if proc.returncode != 0 or not lines:
            raise SystemExit(f"{config}: {proc.stderr[-2000:]}")
        rows[config] = json.loads(lines[-1][len("MLP_RESULT "):])
    info = machine_info(args.threads)
    text = [
        "# torchao-quantized MLP at batch 1: eager vs inductor vs luminal",
        "",
        f"commit `{info.get('git_commit')}` · {info.get('cpu_model')} · {args.threads} threads · torch "
        f"{info.get('torch_version')} · {args.dtype} activations · medians of {args.calls} calls · read-only "
        f"bandwidth {read_gbps:.1f} GB/s (measured in this run)",
        "",
        "2048→5632→2048 SiLU MLP (23M weights). Floor: the weights' stored bytes ÷ read bandwidth. "
        "Error: max |output − eager's|.",
        "",
        "| torchao config | eager ms | inductor ms | luminal ms | luminal vs eager | luminal vs inductor "
        "| stored MB | bytes floor ms | luminal ÷ floor | luminal error | inductor error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config, row in rows.items():
        ms = row["ms"]
        floor = row["weight_bytes"] / (read_gbps * 1e9) * 1e3
        text.append(
            f"| {config} | {ms['eager']:.2f} | {ms['inductor']:.2f} | {ms['luminal']:.2f} | "
            f"{ms['eager'] / ms['luminal']:.1f}x | {ms['inductor'] / ms['luminal']:.1f}x | "
            f"{row['weight_bytes'] / 1e6:.1f} | {floor:.2f} | {ms['luminal'] / floor:.2f}x | "
            f"{row['error']['luminal']:.2g} | {row['error']['inductor']:.2g} |")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"mlp_{args.dtype}_latest.md"
    path.write_text("\n".join(text) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
