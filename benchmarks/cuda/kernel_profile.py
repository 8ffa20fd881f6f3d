"""Where a path's prefill and decode time goes on the GPU: torch.profiler's per-kernel table.

    python benchmarks/cuda/kernel_profile.py --config llama-membound-long --paths luminal inductor --out DIR

For each path (in this process, one after another), the TTFT harness's Session is built, wrapped
and called once per shape (compiling), then profiled over `--iters` batched prefills and, apart,
the greedy decode steps after them. DIR/profile_<config>.md gets, per path and phase, the kernels
sorted by their total device time. Luminal's generated kernels are named
`lm_<group kind>_<hash>` (attention, row, pointwise, matmul, ...), cuBLASLt's by cuBLAS; the same
hash in both phases is the same kernel. With `--device cpu` the table is host time: that only
checks this script where there is no GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.cuda.run import PATHS, wrap  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--paths", nargs="+", default=["luminal", "inductor"], choices=PATHS)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=8)
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", required=True)
    return parser.parse_args(argv)


def kernel_table(profiler, device: str, top: int) -> str:
    """The profiled events as a markdown table, the most device time first."""
    on_device = device != "cpu"
    rows = []
    for event in profiler.key_averages():
        total_us = event.self_device_time_total if on_device else event.self_cpu_time_total
        if total_us > 0:
            rows.append((total_us, event.count, event.key))
    rows.sort(reverse=True)
    everything = sum(r[0] for r in rows) or 1.0
    lines = ["| kernel | calls | total ms | share | µs per call |", "|---|---|---|---|---|"]
    for total_us, count, name in rows[:top]:
        short = name if len(name) <= 90 else name[:87] + "..."
        lines.append(f"| `{short}` | {count} | {total_us / 1000:.3f} | {100 * total_us / everything:.1f}% | "
                     f"{total_us / count:.1f} |")
    lines.append(f"| all {len(rows)} kinds | | {everything / 1000:.3f} | 100% | |")
    return "\n".join(lines)


def profile_path(config_name: str, path: str, args: argparse.Namespace) -> str:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from benchmarks.ttft.configs import load_configs
    from benchmarks.ttft.measure import Session, first_call_ms

    config = load_configs()[config_name]
    session = Session(config, args.decode_tokens, args.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    with torch.no_grad():
        session.eager_init()
        fn = wrap(session.model, path)
        first_call_ms(session, fn, batched=True)
        first_call_ms(session, fn, batched=False)
        session.batched_then_decode(fn)  # one untimed round after compiling (graph capture)
        with profile(activities=activities) as prefill:
            for _ in range(args.iters):
                session.cache.reset()
                token = session.forward(fn, session.prompt, session.prompt_positions)
                token.item()
        with profile(activities=activities) as decode:
            session.decode(fn, token)
    return (f"## {path}: {args.iters} prefills of {len(config.prompt_ids)} tokens\n\n"
            f"{kernel_table(prefill, args.device, args.top)}\n\n"
            f"## {path}: {args.decode_tokens} decode steps after the last prefill\n\n"
            f"{kernel_table(decode, args.device, args.top)}\n")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import torch

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    where = torch.cuda.get_device_name() if args.device == "cuda" else "the CPU (host time only)"
    sections = [f"# Kernel profile of {args.config} on {where}\n\ntorch {torch.__version__}; "
                "self time per kernel name, summed over the profiled calls.\n"]
    for path in args.paths:
        try:
            sections.append(profile_path(args.config, path, args))
        except Exception as error:  # one path's failure must not lose the other's table
            sections.append(f"## {path}: failed\n\n```\n{type(error).__name__}: {error}\n```\n")
        (out / f"profile_{args.config}.md").write_text("\n".join(sections))
    print("\n".join(sections))


if __name__ == "__main__":
    main()
