"""Whose logits are nearer the exact answer: eager's or luminal's?

A half-precision model with random weights has near-tied logits, so greedy tokens can part from
eager's after a few steps without anything being wrong. This check decides it: the same model's
logits from eager and from luminal, each against an f32 reference (the model in f32, every torchao
weight dequantized), for the whole prompt and for one token (a decode-shaped GEMV), without a cache.
If luminal's distance to the reference is about eager's, the divergence is rounding; a bug shows as
a distance far above eager's.

    python benchmarks/cuda/reference_check.py llama-1b-int8 [--device cuda]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.ttft.configs import load_configs  # noqa: E402
from benchmarks.ttft.measure import build_model  # noqa: E402


def f32_reference(model: torch.nn.Module) -> torch.nn.Module:
    """A copy in f32 whose quantized Linear weights are their dequantized values."""
    reference = copy.deepcopy(model)
    for module in reference.modules():
        if isinstance(module, torch.nn.Linear) and hasattr(module.weight, "dequantize"):
            module.weight = torch.nn.Parameter(module.weight.dequantize().float(), requires_grad=False)
    return reference.float()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    import luminal

    for name in args.configs:
        config = load_configs()[name]
        model = build_model(config).to(args.device).eval()
        reference = f32_reference(model)
        compiled = torch.compile(model, backend=luminal.luminal_backend, dynamic=False)
        prompt = torch.tensor([config.prompt_ids], device=args.device)
        with torch.no_grad():
            for shape, ids in (("prompt", prompt), ("one token", prompt[:, :1])):
                exact = reference(input_ids=ids, use_cache=False).logits.float()
                eager = model(input_ids=ids, use_cache=False).logits.float()
                start = time.perf_counter()
                ours = compiled(input_ids=ids, use_cache=False).logits.float()
                first_call_s = time.perf_counter() - start

                def distance(a: torch.Tensor, b: torch.Tensor) -> float:
                    return (a - b).abs().max().item()

                def same_argmax(a: torch.Tensor, b: torch.Tensor) -> float:
                    return (a.argmax(-1) == b.argmax(-1)).float().mean().item()

                print(f"{name} {shape}: |ref|max {exact.abs().max().item():.3f}  "
                      f"eager-ref {distance(eager, exact):.4f}  luminal-ref {distance(ours, exact):.4f}  "
                      f"luminal-eager {distance(ours, eager):.4f}  argmax eq luminal/eager "
                      f"{same_argmax(ours, eager):.2f} ref/eager {same_argmax(exact, eager):.2f} "
                      f"first call {first_call_s:.1f}s", flush=True)


if __name__ == "__main__":
    main()
