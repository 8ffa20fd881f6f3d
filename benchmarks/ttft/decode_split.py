"""Where a decode step's time goes, for each compiled path, in one process.

    python benchmarks/ttft/decode_split.py --configs llama-membound-bf16 llama-1b --out DIR

For each config, inductor and luminal decode the same model in turn (rounds interleaved, a read
probe in each round, as interleaved.py does) and each decode step, timed as the ttft bench times
it (the harness's forward and argmax), is split into the time inside the backend's compiled
graph and the rest: dynamo's guards and frame, the HF code around the graph, the argmax. The
ttft bench's "TPOT ÷ read floor" divides the whole step by weight bytes ÷ read bandwidth; this
says how much of that ratio is the graph a backend compiles and how much the Python every path
pays around it. Writes DIR/decode_split.md and DIR/decode_split.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # repo root, so `benchmarks` imports

import torch  # noqa: E402

from benchmarks.common.machine import machine_info  # noqa: E402
from benchmarks.kernels.roofline import read_bandwidth_gbps  # noqa: E402
from benchmarks.ttft.configs import load_configs, select  # noqa: E402
from benchmarks.ttft.measure import Session  # noqa: E402

PATHS = ("inductor", "luminal")


class GraphClock:
    """Seconds spent inside the compiled graphs a backend returned, summed since the last reset."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def timed(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """`compiled` with its calls timed."""

        def call(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return compiled(*args)
            finally:
                self.seconds += time.perf_counter() - start

        return call


def compiled_model(path: str, model: torch.nn.Module, clock: GraphClock, threads: int,
                   luminal_options: dict[str, Any]) -> Callable[..., Any]:
    """torch.compile(model) with the path's backend, as the ttft bench's paths compile it
    (dynamic=False; luminal on the bench's threads with the config's luminal_options), each
    returned graph timed by `clock`."""
    if path == "inductor":
        inductor = torch._dynamo.lookup_backend("inductor")

        def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            return clock.timed(inductor(gm, example_inputs))
    else:
        import luminal

        def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            options = {"num_threads": threads, **luminal_options}
            return clock.timed(luminal.luminal_backend(gm, example_inputs, options=options))

    return torch.compile(model, backend=backend, dynamic=False)


def decode_steps(session: Session, fn: Callable[..., Any],
                 clock: GraphClock) -> tuple[list[float], list[float]]:
    """(step ms, in-graph ms) of each decode step after a batched prefill of the prompt."""
    session.cache.reset()
    token = session.forward(fn, session.prompt, session.prompt_positions)
    steps, in_graph = [], []
    first = len(session.step_ids)
    for position in range(first, first + session.decode_tokens):
        clock.seconds = 0.0
        start = time.perf_counter()
        token = session.forward(fn, token, session.positions[position])
        token.item()
        steps.append((time.perf_counter() - start) * 1e3)
        in_graph.append(clock.seconds * 1e3)
    return steps, in_graph


def split_config(name: str, rounds: int, steps: int, threads: int, paths: list[str]) -> dict[str, Any]:
    # A fresh dynamo per config: the graphs of earlier configs' models (the same forward code)
    # would count toward its recompile limit, past which it runs the model uncompiled.
    torch._dynamo.reset()
    config = select([name], load_configs())[0]
    session = Session(config, steps)
    session.eager_init()
    clocks = {path: GraphClock() for path in paths}
    fns = {path: compiled_model(path, session.model, clocks[path], threads, config.luminal_options)
           for path in paths}
    for path in paths:  # compile the prefill and decode graphs outside the timing
        decode_steps(session, fns[path], clocks[path])
    per_round: dict[str, list[tuple[float, float]]] = {path: [] for path in paths}
    reads = []
    for _ in range(rounds):
        reads.append(read_bandwidth_gbps())
        for path in paths:
            step_ms, graph_ms = decode_steps(session, fns[path], clocks[path])
            per_round[path].append((statistics.median(step_ms), statistics.median(graph_ms)))
    result: dict[str, Any] = {"config": name, "weight_bytes": session.weight_bytes(),
                              "read_gbps": statistics.median(reads), "read_gbps_rounds": reads}
    floor_ms = result["weight_bytes"] / (result["read_gbps"] * 1e9) * 1e3
    result["floor_ms"] = floor_ms
    for path in paths:
        step = statistics.median(s for s, _ in per_round[path])
        graph = statistics.median(g for _, g in per_round[path])
        result[path] = {"step_ms": step, "graph_ms": graph, "outside_ms": step - graph,
                        "step_vs_floor": step / floor_ms, "graph_vs_floor": graph / floor_ms,
                        "rounds": per_round[path]}
    return result


def markdown(results: list[dict[str, Any]], header: str, paths: list[str]) -> str:
    lines = [header, "",
             "Medians over the rounds of each round's median step. \"In graph\": inside the graphs the "
             "backend compiled; \"outside\": the rest of the step (dynamo's guards and frame, the HF "
             "code around the graph, the argmax). Floor: weight bytes ÷ the read probe's median.", "",
             "| config | floor (ms) | path | step (ms) | in graph (ms) | outside (ms) | step ÷ floor "
             "| in graph ÷ floor |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for path in paths:
            p = r[path]
            lines.append(f"| {r['config']} | {r['floor_ms']:.2f} | {path} | {p['step_ms']:.2f} | "
                         f"{p['graph_ms']:.2f} | {p['outside_ms']:.2f} | {p['step_vs_floor']:.2f}x | "
                         f"{p['graph_vs_floor']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", required=True)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=32, help="decode steps per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    results = [split_config(name, args.rounds, args.steps, args.threads, args.paths) for name in args.configs]
    machine = machine_info(args.threads)
    header = (f"# Decode step split, {machine['timestamp']}\n\n"
              f"commit `{machine['git_commit']}` · {machine['cpu_model']} · {machine['cores']} cores · "
              f"{args.threads} threads · torch {machine['torch_version']} · "
              f"{args.rounds} rounds of {args.steps} steps")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decode_split.json").write_text(json.dumps({"machine": machine, "configs": results}, indent=1))
    (args.out / "decode_split.md").write_text(markdown(results, header, args.paths))
    print(markdown(results, header, args.paths))


if __name__ == "__main__":
    main()
