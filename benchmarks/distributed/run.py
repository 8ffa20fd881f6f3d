"""Tensor-parallel decode and prefill: eager, inductor and luminal with TP=2 (two processes under
torchrun, gloo, 1 thread each) and in one process with 2 threads, in one run on one machine.

    python benchmarks/distributed/run.py --configs llama-membound-f32 llama-membound-bf16

Each (config, layout, path) runs in fresh processes (rank.py) with empty compile caches; the
model is the ttft bench's seeded config (benchmarks/ttft/configs.toml), saved once and loaded by
every process (tp_plan="auto" under torchrun). Writes results/distributed/distributed_latest.{csv,md}.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

from benchmarks.common.machine import machine_info  # noqa: E402
from benchmarks.ttft.configs import build_model, load_configs, select  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results" / "distributed"
LAYOUTS = {"tp2": (2, 1), "single": (1, 2)}  # layout -> (processes, threads per process)
PATHS = ["eager", "inductor", "luminal"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="+", default=["llama-membound-f32", "llama-membound-bf16"])
    p.add_argument("--paths", nargs="+", default=PATHS, choices=PATHS)
    p.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    p.add_argument("--decode-tokens", type=int, default=16)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmups", type=int, default=1)
    p.add_argument("--timeout", type=int, default=1800, help="seconds per (config, layout, path)")
    p.add_argument("--out", type=Path, default=RESULTS)
    return p.parse_args()


def run_one(config, model_dir: Path, layout: str, path: str, args, scratch: Path) -> dict:
    processes, threads = LAYOUTS[layout]
    out = scratch / f"{config.name}-{layout}-{path}.json"
    command = [
        str(HERE / "rank.py"), "--model-dir", str(model_dir), "--path", path, "--dtype", config.dtype,
        "--prompt", ",".join(map(str, config.prompt_ids)), "--max-cache-len", str(config.max_cache_len),
        "--decode-tokens", str(args.decode_tokens), "--iters", str(args.iters), "--warmups", str(args.warmups),
        "--threads", str(threads), "--out", str(out),
    ]
    if processes > 1:
        # --standalone: a local rendezvous on a free port.
        command = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}", *command]
    caches = scratch / f"caches-{layout}-{path}"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
           "LUMINAL_CACHE_DIR": str(caches / "luminal")}
    row = {"config": config.name, "layout": layout, "path": path, "processes": processes, "threads": threads}
    try:
        done = subprocess.run([sys.executable, *command], env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {**row, "error": f"timed out after {args.timeout} s"}
    if done.returncode != 0 or not out.exists():
        return {**row, "error": (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1][:300]}
    return {**row, **json.loads(out.read_text())}


def render(rows: list[dict], info: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fields = sorted({k for r in rows for k in r})
    with (out / "distributed_latest.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    by = {(r["config"], r["layout"], r["path"]): r for r in rows}

    def ms(r: dict | None, key: str) -> str:
        return f"{r[key]:.1f}" if r and r.get(key) is not None else "—"

    def ratio(a: dict | None, b: dict | None, key: str) -> str:
        if not a or not b or a.get(key) is None or b.get(key) is None:
            return "—"
        return f"{b[key] / a[key]:.2f}x"

    lines = [
        "# Tensor-parallel decode and prefill",
        "",
        f"Run {info['timestamp']}, commit {info['git_commit']}, {info['cpu_model']}, {info['cores']} cores, "
        f"torch {info['torch_version']}. TP=2: two processes under torchrun (gloo on 127.0.0.1, transformers' "
        "tp_plan=\"auto\"), 1 thread each; single: one process, 2 threads. Medians; prefill is the batched "
        "32-token prompt into a 256-slot StaticCache; TPOT the median decode step. `wait share`: the part "
        "of a luminal decode step blocked on collectives (its runtime measures the waits).",
        "",
        "| config | layout | eager TPOT | inductor TPOT | luminal TPOT | luminal vs inductor (decode) | "
        "eager prefill | inductor prefill | luminal prefill | luminal vs inductor (prefill) | luminal wait share | "
        "tokens equal eager |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config in dict.fromkeys(r["config"] for r in rows):
        for layout in dict.fromkeys(r["layout"] for r in rows if r["config"] == config):
            e, i, l = (by.get((config, layout, p)) for p in PATHS)
            share = f"{l['collective_wait_share'] * 100:.0f}%" if l and l.get("collective_wait_share") is not None else "—"
            agree = "yes" if l and e and l.get("tokens") == e.get("tokens") else ("—" if not l or not e else "no")
            lines.append(
                f"| {config} | {layout} | {ms(e, 'tpot_ms')} | {ms(i, 'tpot_ms')} | {ms(l, 'tpot_ms')} | "
                f"{ratio(l, i, 'tpot_ms')} | {ms(e, 'prefill_batched_ms')} | {ms(i, 'prefill_batched_ms')} | "
                f"{ms(l, 'prefill_batched_ms')} | {ratio(l, i, 'prefill_batched_ms')} | {share} | {agree} |"
            )
    errors = [r for r in rows if r.get("error")]
    if errors:
        lines += ["", "Failed:"] + [f"- {r['config']} {r['layout']} {r['path']}: {r['error']}" for r in errors]
    lines += ["", "Reproduce: `python benchmarks/distributed/run.py --configs "
              + " ".join(dict.fromkeys(r["config"] for r in rows)) + "`", ""]
    (out / "distributed_latest.md").write_text("\n".join(lines))


def main() -> None:
    args = parse_args()
    configs = select(args.configs, load_configs())
    info = machine_info(threads=2)
    rows = []
    with tempfile.TemporaryDirectory(prefix="luminal-dist-bench-") as tmp:
        scratch = Path(tmp)
        for config in configs:
            model_dir = scratch / config.name
            build_model(config).save_pretrained(model_dir)
            for layout in args.layouts:
                for path in args.paths:
                    print(f"{config.name} {layout} {path} ...", flush=True)
                    row = run_one(config, model_dir, layout, path, args, scratch)
                    print("   ", {k: v for k, v in row.items() if k != "tokens"}, flush=True)
                    rows.append(row)
    render(rows, info, args.out)
    print((args.out / "distributed_latest.md").read_text())


if __name__ == "__main__":
    main()
