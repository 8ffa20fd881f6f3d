"""TTFT/TPOT on a CUDA GPU: eager, inductor and luminal side by side, in one run.

    python benchmarks/cuda/run.py --configs llama-membound-bf16 llama-1b --out DIR

Each (config, path) runs in its own process (a kernel fault poisons its CUDA context, and must not
take the other paths' numbers with it), one after another on an idle GPU, each under a time limit.
A process is the TTFT harness's Session (benchmarks/ttft/measure.py) on the GPU: the config's
seeded model with a StaticCache, one eager step (the cache allocates lazily), the model wrapped,
then:

  - compile: the first call of the (1,P) and the (1,1) shape, wall clock (includes compiling);
  - TTFT: `iters` times, reset the cache and prefill the whole prompt, up to the argmax on the host;
  - TPOT: after each of those prefills, `decode_tokens` greedy steps, each timed to its argmax.

Every timed region ends with the token on the host, so no time hides in the queue. Times are
medians; the table gives each path's ratio to eager and to inductor measured in the same run, and
the tokens luminal generated beside eager's (random weights: a mismatch late in a sequence can be
a near-tie, a mismatch at the first token is a bug to look at). Results: DIR/cuda_results.json and
DIR/cuda_results.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PATHS = ("eager", "inductor", "luminal")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["llama-membound-bf16", "llama-1b"])
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--decode-tokens", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=240, help="seconds per (config, path) process")
    parser.add_argument("--device", default="cuda", help="cpu only checks this script where there is no GPU")
    parser.add_argument("--out", required=True)
    parser.add_argument("--worker", nargs=2, metavar=("CONFIG", "PATH"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def wrap(model, path: str):
    import torch

    if path == "eager":
        return model
    if path == "inductor":
        return torch.compile(model, dynamic=False)
    import luminal

    return torch.compile(model, backend=luminal.luminal_backend, dynamic=False)


def worker(config_name: str, path: str, device: str, iters: int, decode_tokens: int) -> dict:
    import torch

    from benchmarks.ttft.configs import load_configs
    from benchmarks.ttft.measure import Session, first_call_ms

    config = load_configs()[config_name]
    session = Session(config, decode_tokens, device)
    with torch.no_grad():
        session.eager_init()  # the cache allocates its tensors
        fn = wrap(session.model, path)
        compile_prefill_ms = first_call_ms(session, fn, batched=True)
        compile_decode_ms = first_call_ms(session, fn, batched=False)
        ttft, tpot, tokens = [], [], []
        for _ in range(iters + 1):  # the first iteration warms up
            ms, steps, tokens = session.batched_then_decode(fn)
            ttft.append(ms)
            tpot.append(statistics.median(steps))
        session.cache.reset()
        out = fn(input_ids=session.prompt, position_ids=session.prompt_positions, past_key_values=session.cache,
                 use_cache=True)
        first_logits = out.logits[:, -1].float().cpu()
    return {
        "config": config_name,
        "path": path,
        "dtype": config.dtype,
        "prompt_len": len(config.prompt_ids),
        "compile_prefill_ms": compile_prefill_ms,
        "compile_decode_ms": compile_decode_ms,
        "ttft_ms": statistics.median(ttft[1:]),
        "tpot_ms": statistics.median(tpot[1:]),
        "tokens": tokens,
        "first_logits": first_logits.flatten().tolist(),
        "gpu": torch.cuda.get_device_name() if device == "cuda" else device,
        "torch": torch.__version__,
    }


def run_one(config: str, path: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--out", args.out, "--iters", str(args.iters),
               "--decode-tokens", str(args.decode_tokens), "--device", args.device, "--worker", config, path]
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    print(f"== {config} / {path}", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired as timeout:
        log = timeout.stderr or b""  # bytes even with text=True
        log = log.decode(errors="replace") if isinstance(log, bytes) else log
        return {"config": config, "path": path, "error": f"timed out after {args.timeout:.0f} s", "log": log[-3000:]}
    for line in done.stdout.splitlines():
        if line.startswith("CUDA_BENCH_RESULT "):
            return json.loads(line.removeprefix("CUDA_BENCH_RESULT "))
    return {"config": config, "path": path, "error": f"exit {done.returncode}", "log": done.stderr[-3000:]}


def render(results: list[dict]) -> str:
    ok = [r for r in results if "error" not in r]
    gpu = ok[0]["gpu"] if ok else "?"
    lines = [f"# TTFT / TPOT on {gpu}", "",
             f"torch {ok[0]['torch'] if ok else '?'}; medians; ratios are eager's (or inductor's) time over the path's.", "",
             "| config | path | TTFT ms | TPOT ms | TTFT vs eager | TTFT vs inductor | TPOT vs eager | TPOT vs inductor | first call prefill / decode ms | tokens = eager's | max abs logit diff vs eager |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    by_key = {(r["config"], r["path"]): r for r in results}
    for config in dict.fromkeys(r["config"] for r in results):
        eager, inductor = by_key.get((config, "eager")), by_key.get((config, "inductor"))
        for path in PATHS:
            r = by_key.get((config, path))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {config} | {path} | error: {r['error']} | | | | | | | | |")
                continue

            def ratio(peer, key):
                return f"{peer[key] / r[key]:.2f}x" if peer and "error" not in peer else "-"

            same, diff = "-", "-"
            if eager and "error" not in eager and "max_abs_logit_diff_vs_eager" in r:
                agree = sum(a == b for a, b in zip(r["tokens"], eager["tokens"]))
                same = f"{agree}/{len(eager['tokens'])}"
                diff = f"{r['max_abs_logit_diff_vs_eager']:.3g}"
            lines.append(
                f"| {config} | {path} | {r['ttft_ms']:.2f} | {r['tpot_ms']:.3f} | {ratio(eager, 'ttft_ms')} | "
                f"{ratio(inductor, 'ttft_ms')} | {ratio(eager, 'tpot_ms')} | {ratio(inductor, 'tpot_ms')} | "
                f"{r['compile_prefill_ms']:.0f} / {r['compile_decode_ms']:.0f} | {same} | {diff} |")
    errors = [r for r in results if "error" in r]
    for r in errors:
        lines += ["", f"## {r['config']} / {r['path']}: {r['error']}", "", "```", r.get("log", "").strip(), "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        result = worker(*args.worker, args.device, args.iters, args.decode_tokens)
        print("CUDA_BENCH_RESULT " + json.dumps(result), flush=True)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, eager_logits = [], {}
    for config in args.configs:
        for path in args.paths:
            result = run_one(config, path, args)
            # Each path's first prefill logits against eager's; only the difference is kept.
            logits = result.pop("first_logits", None)
            if path == "eager" and logits is not None:
                eager_logits[config] = logits
            if logits is not None and config in eager_logits:
                result["max_abs_logit_diff_vs_eager"] = max(abs(a - b) for a, b in zip(logits, eager_logits[config]))
            results.append(result)
            (out / "cuda_results.json").write_text(json.dumps(results, indent=1))
            (out / "cuda_results.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
