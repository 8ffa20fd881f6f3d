"""The one TTFT/TPOT methodology every path script runs; a path only says how the model is wrapped.

Per process: build the config's seeded model, make one StaticCache, run one eager step at position 0
(StaticCache allocates its tensors lazily, and that must not happen inside a compiled graph), then
wrap the model (`prepare`). The first wrapped call per input shape is timed as compile time. Then
`warmups` untimed and `iters` timed iterations, each doing:

  1. reset the cache; sequential prefill: one (1,1) forward per prompt token, the first generated
     token taken by argmax after the last one. Wall clock of the whole loop = one TTFT(seq) sample.
  2. `decode_tokens` greedy steps from there, each timed; their mean = one TPOT sample.
  3. reset the cache; one batched (1,P) forward of the whole prompt + argmax = one TTFT(batched) sample.

A config with `sequential_prefill = false` (long prompts) skips 1: its iteration is 3, then 2 from
the cache the batched prefill filled.

Every path sees the same ids, positions, cache and step counts; a path that cannot run the batched
shape still reports the sequential numbers, with the reason in `note`. After the timed iterations,
one more decode step (after a sequential prefill) measures the bytes the path copied, where the
path can count them (`bytes_copied`; luminal's runtime does), next to the bytes of the K/V rows a
step adds to the cache: the least any path must write.

An encoder (BERT) has no cache: an iteration is one forward of the whole prompt, timed as batched
TTFT, and its "tokens" are the argmax ids at every position.
Prints one `BENCH_RESULT {json}` line on stdout; progress goes to stderr as `BENCH_STAGE` lines.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from typing import Any, Callable

import torch

from benchmarks.common.stats import summarize
from benchmarks.ttft.configs import CONFIGS_FILE, BenchConfig, build_model, load_configs, select
from benchmarks.ttft.flops import count_flops

Prepare = Callable[[torch.nn.Module, argparse.Namespace], Callable[..., Any]]
# Bytes the path has copied so far, summed over every graph it compiled.
BytesCopied = Callable[[], int]
# Milliseconds the backend itself has spent compiling so far (for luminal: export, reading the
# archive, translation and the runtime's compile), to tell its part of a first call from dynamo's.
BackendMs = Callable[[], float]


def stage(text: str) -> None:
    """Tells the orchestrator where we are, so a timeout can say what it interrupted."""
    print(f"BENCH_STAGE {text}", file=sys.stderr, flush=True)


def argument_parser(description: str = __doc__) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--configs-file", default=str(CONFIGS_FILE))
    parser.add_argument("--iters", type=int, help="measured iterations (default: the config's)")
    parser.add_argument("--warmups", type=int, help="untimed iterations (default: the config's)")
    parser.add_argument("--decode-tokens", type=int, help="greedy decode steps per iteration (default: the config's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile-only", action="store_true", help="stop after the first call of each shape")
    parser.add_argument("--cache-dir", help="luminal's kernel cache (the compile-time bench sets it)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return argument_parser().parse_args(argv)


def stored_bytes(tensor: torch.Tensor) -> int:
    """A tensor's bytes as held: a tensor subclass (torchao's quantized weights) by its inner
    tensors, not by its logical dtype."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(tensor):
        return sum(stored_bytes(getattr(tensor, name)) for name in tensor.__tensor_flatten__()[0])
    return tensor.numel() * tensor.element_size()


class Session:
    """The model, its cache and the fixed inputs of one config."""

    def __init__(self, config: BenchConfig, decode_tokens: int, device: str = "cpu") -> None:
        self.config = config
        self.decode_tokens = decode_tokens
        self.model = build_model(config).to(device)
        ids = config.prompt_ids
        # Inputs are built once, outside every timed region, identically for every path.
        self.step_ids = [torch.tensor([[i]], device=device) for i in ids]
        self.positions = [torch.tensor([[p]], device=device) for p in range(len(ids) + decode_tokens)]
        self.prompt = torch.tensor([ids], device=device)
        self.prompt_positions = torch.arange(len(ids), device=device).unsqueeze(0)
        self.prompt_mask = torch.ones_like(self.prompt)
        self.cache = None
        if not config.is_encoder:
            from transformers import StaticCache

            self.cache = StaticCache(config=self.model.config, max_cache_len=config.max_cache_len)

    def forward(self, fn: Callable[..., Any], ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = fn(input_ids=ids, position_ids=positions, past_key_values=self.cache, use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def encode(self, fn: Callable[..., Any]) -> tuple[float, list[int]]:
        """(ms, argmax id per position) of one encoder forward of the whole prompt."""
        start = time.perf_counter()
        out = fn(input_ids=self.prompt, attention_mask=self.prompt_mask)
        ids = out.logits[0].argmax(-1).tolist()
        return (time.perf_counter() - start) * 1000, ids

    def weight_bytes(self) -> int:
        """Bytes of the weights one decode step reads: every parameter as stored (a quantized
        one's int8 values, scales and zero points), but an input embedding table only through the
        rows it gathers (unless the LM head reads it whole, tied)."""
        total = sum(stored_bytes(p) for p in self.model.parameters())
        embedding = self.model.get_input_embeddings().weight
        head = self.model.get_output_embeddings()
        if head is None or head.weight is not embedding:
            total -= stored_bytes(embedding)
        return total

    def prefill_flops(self) -> int:
        """FLOPs of one batched prefill: its matmuls, and attention's products over the query-key
        pairs its mask attends (benchmarks/ttft/flops.py)."""
        self.cache.reset()
        total = count_flops(lambda: self.forward(self.model, self.prompt, self.prompt_positions))
        self.cache.reset()
        return total

    def kv_row_bytes(self) -> int:
        """Bytes of the K/V rows one decode step adds to the cache (every layer, keys and values)."""
        return sum(t.numel() // t.shape[-2] * t.element_size() for layer in self.cache.layers
                   for t in (layer.keys, layer.values))

    def prefill_one_by_one(self, fn: Callable[..., Any]) -> torch.Tensor:
        """The prompt fed one token at a time into the cache; the first generated token."""
        for p, ids in enumerate(self.step_ids):
            token = self.forward(fn, ids, self.positions[p])
        return token

    def bytes_copied_by_one_step(self, fn: Callable[..., Any], bytes_copied: BytesCopied) -> int:
        """What the path copied during one decode step, after a prefill of the prompt."""
        self.cache.reset()
        if self.config.sequential_prefill:
            token = self.prefill_one_by_one(fn)
        else:
            token = self.forward(fn, self.prompt, self.prompt_positions)
        before = bytes_copied()
        self.forward(fn, token, self.positions[len(self.step_ids)])
        return bytes_copied() - before

    def eager_init(self) -> None:
        self.forward(self.model, self.step_ids[0], self.positions[0])
        self.cache.reset()

    def sequential(self, fn: Callable[..., Any]) -> tuple[float, list[float], list[int]]:
        """(TTFT ms, per-step decode ms, generated ids) of one reset + sequential prefill + decode."""
        self.cache.reset()
        start = time.perf_counter()
        token = self.prefill_one_by_one(fn)
        ttft = (time.perf_counter() - start) * 1000
        steps, generated = self.decode(fn, token)
        return ttft, steps, generated

    def decode(self, fn: Callable[..., Any], token: torch.Tensor) -> tuple[list[float], list[int]]:
        """(per-step ms, generated ids from `token` on) of the greedy steps after a prefill."""
        generated = [int(token.item())]
        steps = []
        for p in range(len(self.step_ids), len(self.step_ids) + self.decode_tokens):
            start = time.perf_counter()
            token = self.forward(fn, token, self.positions[p])
            generated.append(int(token.item()))
            steps.append((time.perf_counter() - start) * 1000)
        return steps, generated

    def batched_then_decode(self, fn: Callable[..., Any]) -> tuple[float, list[float], list[int]]:
        """(TTFT ms, per-step decode ms, generated ids) of one reset + batched prefill + decode."""
        self.cache.reset()
        start = time.perf_counter()
        token = self.forward(fn, self.prompt, self.prompt_positions)
        token.item()
        ttft = (time.perf_counter() - start) * 1000
        steps, generated = self.decode(fn, token)
        return ttft, steps, generated

    def iteration(self, fn: Callable[..., Any], batched_ok: bool
                  ) -> tuple[float | None, list[float], list[int], tuple[float, int] | None]:
        """One timed iteration (the module docstring's 1-3): (sequential TTFT ms or None, per-step
        decode ms, generated ids, (batched TTFT ms, first id) or None)."""
        if self.config.sequential_prefill:
            ttft, steps, generated = self.sequential(fn)
            return ttft, steps, generated, self.batched(fn) if batched_ok else None
        ttft, steps, generated = self.batched_then_decode(fn)
        return None, steps, generated, (ttft, generated[0])

    def batched(self, fn: Callable[..., Any]) -> tuple[float, int]:
        """(TTFT ms, first generated id) of one reset + whole-prompt forward."""
        self.cache.reset()
        start = time.perf_counter()
        token = int(self.forward(fn, self.prompt, self.prompt_positions).item())
        return (time.perf_counter() - start) * 1000, token


def first_call_ms(session: Session, fn: Callable[..., Any], batched: bool) -> float:
    session.cache.reset()
    start = time.perf_counter()
    if batched:
        token = session.forward(fn, session.prompt, session.prompt_positions)
    else:
        token = session.forward(fn, session.step_ids[0], session.positions[0])
    token.item()  # on a GPU, waits for the queued work
    return (time.perf_counter() - start) * 1000


def iteration_stage(i: int, warmups: int, iters: int) -> str:
    """'warmup 1/2', then 'iter 1/10' ...: the stage of loop iteration i."""
    return f"iter {i - warmups + 1}/{iters}" if i >= warmups else f"warmup {i + 1}/{warmups}"


def measure_encoder(session: Session, fn: Callable[..., Any], iters: int, warmups: int, result: dict) -> None:
    stage(f"first call (1,{len(session.prompt[0])})")
    result["compile_batched_ms"] = session.encode(fn)[0]
    samples = []
    for i in range(warmups + iters):
        timed = i >= warmups
        stage(iteration_stage(i, warmups, iters))
        ms, ids = session.encode(fn)
        if timed:
            samples.append(ms)
            result["tokens"] = ids
    result.update(summarize("ttft_batched", samples))
    if samples:
        result["prefill_batched_tps"] = len(session.prompt[0]) * 1000 / result["ttft_batched_ms"]


def run_settings(args: argparse.Namespace) -> tuple[BenchConfig, int, int, int]:
    """(config, iters, warmups, decode_tokens): the arguments' where given, else the config's. Sets
    on `args` what the compiled paths' prepare reads from the config: the torch.compile(dynamic=...)
    both pass, and the luminal path's options."""
    config = select([args.config], load_configs(args.configs_file))[0]
    args.dynamic = None if config.automatic_dynamic else False
    args.luminal_options = config.luminal_options
    iters = args.iters if args.iters is not None else config.iters
    warmups = args.warmups if args.warmups is not None else config.warmups
    decode_tokens = args.decode_tokens if args.decode_tokens is not None else config.decode_tokens
    return config, iters, warmups, decode_tokens


def measure(prepare: Prepare, args: argparse.Namespace, result: dict[str, Any], bytes_copied: BytesCopied | None,
            backend_ms: BackendMs | None) -> None:
    """Fills `result` as it goes, so a failure part-way still reports what was measured."""
    config, iters, warmups, decode_tokens = run_settings(args)
    result.update(
        model=config.arch,
        dtype=config.dtype,
        prompt_tokens=len(config.prompt_ids),
        decode_tokens=decode_tokens,
        iters=iters,
        warmups=warmups,
        attn_implementation=config.attn_implementation,
        automatic_dynamic=config.automatic_dynamic,
        quantization=config.quantization or None,
    )
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)

    stage("build model")
    session = Session(config, decode_tokens)
    if config.is_encoder:
        fn = prepare(session.model, args)
        if not args.compile_only:
            measure_encoder(session, fn, iters, warmups, result)
        return
    session.eager_init()
    fn = prepare(session.model, args)

    stage("first call (1,1)")
    result["compile_ms"] = first_call_ms(session, fn, batched=False)
    if backend_ms is not None:
        result["backend_compile_ms"] = backend_ms()
    batched_ok = True
    stage(f"first call (1,{len(config.prompt_ids)})")
    try:
        result["compile_batched_ms"] = first_call_ms(session, fn, batched=True)
        if backend_ms is not None:
            result["backend_compile_batched_ms"] = backend_ms() - result["backend_compile_ms"]
    except Exception as exc:  # noqa: BLE001 - an unsupported batched shape is a note, not a failed path
        batched_ok = False
        result["note"] = f"batched prefill failed: {type(exc).__name__}: {str(exc).splitlines()[0][:500]}"
    if args.compile_only:
        return

    ttft_seq, ttft_batched, tpot = [], [], []
    if not config.sequential_prefill and not batched_ok:
        raise RuntimeError(f"config {config.name!r} decodes after the batched prefill, which failed: {result['note']}")
    for i in range(warmups + iters):
        timed = i >= warmups
        stage(iteration_stage(i, warmups, iters))
        ttft, steps, generated, batched = session.iteration(fn, batched_ok)
        if timed:
            if ttft is not None:
                ttft_seq.append(ttft)
            tpot.append(sum(steps) / len(steps))
            if batched:
                ttft_batched.append(batched[0])
            result["tokens"] = generated
            result["batched_first_token"] = batched[1] if batched else None
    result.update(summarize("ttft_seq", ttft_seq))
    result.update(summarize("ttft_batched", ttft_batched))
    result.update(summarize("tpot", tpot))
    if tpot:
        result["decode_tps"] = 1000 / result["tpot_ms"]
    if ttft_seq:
        result["prefill_seq_tps"] = len(config.prompt_ids) * 1000 / result["ttft_seq_ms"]
    if ttft_batched:
        result["prefill_batched_tps"] = len(config.prompt_ids) * 1000 / result["ttft_batched_ms"]
    result["kv_row_bytes"] = session.kv_row_bytes()
    result["weight_bytes"] = session.weight_bytes()
    if result["path"] == "eager":  # the same model on every path: counted once, outside the timing
        stage("counting the prefill's FLOPs")
        result["prefill_flops"] = session.prefill_flops()
    if bytes_copied is not None:
        stage("bytes copied by one decode step")
        result["decode_bytes_copied"] = session.bytes_copied_by_one_step(fn, bytes_copied)


def main(path: str, prepare: Prepare, bytes_copied: BytesCopied | None = None, backend_ms: BackendMs | None = None) -> None:
    args = parse_args()
    result: dict[str, Any] = {"path": path, "config": args.config, "threads": args.threads}
    status = 0
    try:
        measure(prepare, args, result, bytes_copied, backend_ms)
    except Exception as exc:  # noqa: BLE001 - any failure becomes the row's error text
        traceback.print_exc()
        result["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        status = 1
    # Dynamo's count of compiled graphs: more than the shapes we call means recompiles crept in.
    result["graphs"] = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("BENCH_RESULT " + json.dumps(result), flush=True)
    sys.exit(status)
