"""One training-step measurement in its own process: a TTFT config's model (dropout off), one
path (eager, inductor or luminal), one precision (f32, or f32 weights under bf16 autocast).

A step is: the model's forward on a fixed [batch, seq] batch with labels (HF computes the
next-token loss inside the model, so inside the compiled graph), backward(), then an eager
foreach AdamW step and zero_grad: the same optimizer in every path, so the paths differ only
in how forward and backward run. The first step (compile + one step) is timed as compile; then
`warmups` untimed and `iters` timed steps, each split into forward, backward and optimizer
times. Every step's loss is reported, so the orchestrator can compare each path's loss curve
with eager's.

Prints one `BENCH_RESULT {json}` line on stdout; progress goes to stderr as `BENCH_STAGE` lines.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.common.stats import summarize  # noqa: E402
from benchmarks.ttft.configs import CONFIGS_FILE, build_model, load_configs, select  # noqa: E402

PATHS = ("eager", "inductor", "luminal")
PRECISIONS = ("f32", "autocast")


def stage(text: str) -> None:
    print(f"BENCH_STAGE {text}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a TTFT config (benchmarks/ttft/configs.toml), f32 variant")
    parser.add_argument("--path", required=True, choices=PATHS)
    parser.add_argument("--precision", default="f32", choices=PRECISIONS)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs-file", default=str(CONFIGS_FILE))
    parser.add_argument("--cache-dir", help="luminal's kernel cache")
    parser.add_argument("--count-flops", action="store_true", help="also count one step's FLOPs (eager path)")
    return parser.parse_args(argv)


def training_model(args: argparse.Namespace) -> torch.nn.Module:
    (config,) = select([args.config], load_configs(Path(args.configs_file)))
    model = build_model(config).train()
    for module in model.modules():  # masks are random: without dropout the paths' losses compare
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def wrap(model: torch.nn.Module, args: argparse.Namespace, compiled: list):
    if args.path == "eager":
        return model
    if args.path == "inductor":
        return torch.compile(model, dynamic=False)
    import luminal

    options = {"num_threads": args.threads}
    if args.cache_dir:
        options["cache_dir"] = args.cache_dir

    def backend(gm, example_inputs):
        compiled.append(luminal.luminal_backend(gm, example_inputs, options=options))
        return compiled[-1]

    return torch.compile(model, backend=backend, dynamic=False)


def count_step_gflop(model: torch.nn.Module, ids: torch.Tensor, autocast: bool) -> float:
    """FLOPs of one forward + backward as torch counts them (matmuls, attention, convolutions):
    the work a GEMM floor is computed from."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / 1e9


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    row: dict = {"path": args.path, "config": args.config, "precision": args.precision, "batch": args.batch,
                 "seq": args.seq, "iters": args.iters, "warmups": args.warmups, "threads": args.threads}
    try:
        torch.set_num_threads(args.threads)
        stage("building the model")
        model = training_model(args)
        row["params"] = sum(p.numel() for p in model.parameters())
        vocab = model.config.vocab_size
        ids = torch.randint(0, vocab, (args.batch, args.seq), generator=torch.Generator().manual_seed(0))
        autocast = args.precision == "autocast"
        if args.count_flops:
            stage("counting FLOPs")
            row["step_gflop"] = count_step_gflop(model, ids, autocast)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        compiled: list = []
        run = wrap(model, args, compiled)
        losses: list[float] = []
        times: dict[str, list[float]] = {"forward": [], "backward": [], "optimizer": [], "step": []}

        def step(record: bool) -> None:
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = run(input_ids=ids, labels=ids).loss
            forward_end = time.perf_counter()
            loss.backward()
            backward_end = time.perf_counter()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            end = time.perf_counter()
            losses.append(loss.item())
            if record:
                for name, ms in (("forward", forward_end - start), ("backward", backward_end - forward_end),
                                 ("optimizer", end - backward_end), ("step", end - start)):
                    times[name].append(ms * 1000)

        stage("first step (compile)")
        start = time.perf_counter()
        step(record=False)
        row["compile_ms"] = (time.perf_counter() - start) * 1000
        if compiled:
            # Each TrainingModel's stats hold its forward's and backward's own.
            parts = [c.stats[part] for c in compiled for part in ("forward", "backward") if part in c.stats]
            row["backend_compile_ms"] = sum(
                p.get(k, 0) for p in parts for k in ("export_ms", "read_ms", "translate_ms", "runtime_compile_ms")
            )
            row["fallback_ops"] = sorted({op for c in compiled for op in c.stats["fallback_ops"]})
        for i in range(args.warmups):
            stage(f"warmup {i + 1}/{args.warmups}")
            step(record=False)
        for i in range(args.iters):
            stage(f"step {i + 1}/{args.iters}")
            step(record=True)
        for name, samples in times.items():
            row.update(summarize(name, samples))
        row["tokens_per_s"] = args.batch * args.seq / (row["step_ms"] / 1000)
        row["losses"] = losses
        row["graphs"] = len(compiled) if args.path == "luminal" else None
    except Exception:  # the row records it; the orchestrator goes on with the next path
        row["error"] = traceback.format_exc()[-2000:]
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("BENCH_RESULT " + json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
