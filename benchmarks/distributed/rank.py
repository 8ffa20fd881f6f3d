"""One process of the distributed bench: run by torchrun (a TP=2 group) or alone (one process).

Loads the saved model (tp_plan="auto" under torchrun: each rank holds its shard), wraps it for
one path (eager, inductor, luminal), and times a batched prefill of the config's prompt and
greedy StaticCache decode steps, every rank doing identical work. Rank 0 writes the medians
(and, for luminal, the share of a decode step spent blocked on collectives) as JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--model-dir", required=True)
    p.add_argument("--path", choices=["eager", "inductor", "luminal"], required=True)
    p.add_argument("--dtype", choices=["f32", "bf16"], required=True)
    p.add_argument("--prompt", required=True, help="comma-separated token ids")
    p.add_argument("--max-cache-len", type=int, default=256)
    p.add_argument("--decode-tokens", type=int, default=16)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmups", type=int, default=1)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--out", required=True)
    return p.parse_args()


def wrap(model, path: str, threads: int, compiled: list):
    if path == "eager":
        return model
    if path == "inductor":
        return torch.compile(model, backend="inductor", dynamic=False)
    import luminal

    def backend(gm, example_inputs):
        graph = luminal.luminal_backend(gm, example_inputs, options={"num_threads": threads})
        compiled.append(graph)
        return graph

    return torch.compile(model, backend=backend, dynamic=False)


def sync() -> None:
    if dist.is_initialized():
        dist.barrier()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    from transformers import AutoModelForCausalLM, StaticCache

    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    extra = {"tp_plan": "auto"} if distributed else {}
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=dtype, **extra).eval()
    ids = [int(i) for i in args.prompt.split(",")]
    prompt = torch.tensor([ids])
    prompt_positions = torch.arange(len(ids)).unsqueeze(0)
    cache = StaticCache(config=model.config, max_cache_len=args.max_cache_len)
    # One eager step allocates the cache's tensors (lazily, on first use), as the ttft bench does:
    # compiled paths then trace the steady state and compile each phase once.
    model(input_ids=prompt[:, :1], position_ids=prompt_positions[:, :1], past_key_values=cache, use_cache=True)
    compiled: list = []
    fn = wrap(model, args.path, args.threads, compiled)
    positions = [torch.tensor([[p]]) for p in range(len(ids) + args.decode_tokens)]

    def prefill() -> tuple[float, torch.Tensor]:
        cache.reset()
        sync()
        start = time.perf_counter()
        token = fn(input_ids=prompt, position_ids=prompt_positions, past_key_values=cache, use_cache=True)
        token = token.logits[:, -1].argmax(-1, keepdim=True)
        return (time.perf_counter() - start) * 1000, token

    def decode(token: torch.Tensor) -> tuple[list[float], list[int], list[float]]:
        steps, tokens, waits = [], [], []
        for k in range(args.decode_tokens):
            start = time.perf_counter()
            out = fn(input_ids=token, position_ids=positions[len(ids) + k], past_key_values=cache, use_cache=True)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            steps.append((time.perf_counter() - start) * 1000)
            tokens.append(int(token))
            if compiled:
                waits.append(sum(g.stats.get("collective_wait_ms_last_run", 0.0) for g in compiled[-1:]))
        return steps, tokens, waits

    start = time.perf_counter()
    _, token = prefill()
    compile_prefill_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    decode_first = fn(input_ids=token, position_ids=positions[len(ids)], past_key_values=cache, use_cache=True)
    compile_decode_ms = (time.perf_counter() - start) * 1000
    del decode_first

    prefill_ms, tpot_ms, wait_share, tokens = [], [], [], []
    for i in range(args.warmups + args.iters):
        ms, token = prefill()
        steps, tokens, waits = decode(token)
        if i >= args.warmups:
            prefill_ms.append(ms)
            tpot_ms.append(statistics.median(steps))
            if waits:
                wait_share.append(sum(waits) / sum(steps))
    result = {
        "world_size": dist.get_world_size() if distributed else 1,
        "threads_per_process": args.threads,
        "prefill_batched_ms": statistics.median(prefill_ms),
        "tpot_ms": statistics.median(tpot_ms),
        "collective_wait_share": statistics.median(wait_share) if wait_share else None,
        "compile_prefill_ms": compile_prefill_ms,
        "compile_decode_ms": compile_decode_ms,
        "graphs": len(compiled) if compiled else None,
        "collectives_per_decode_step": compiled[-1].stats["collectives"] if compiled else None,
        "tokens": tokens,
    }
    if not distributed or dist.get_rank() == 0:
        Path(args.out).write_text(json.dumps(result))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
