"""Compile a small Llama-style model with luminal, check it against eager, time all three.

    python examples/quickstart.py [--steps N] [--threads T]

The model is built from a config with random weights (nothing is downloaded). Prints the
largest logit difference to eager and a table of median latencies for eager, inductor and
luminal, each measured in this process over the same inputs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

import luminal


def build_model() -> transformers.PreTrainedModel:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        vocab_size=2048,
        max_position_embeddings=512,
        attn_implementation="sdpa",
        use_cache=False,
    )
    return transformers.LlamaForCausalLM(config).eval()


def median_ms(fn, inputs: torch.Tensor, steps: int) -> tuple[float, float]:
    """(first call ms, median of `steps` later calls in ms)."""
    start = time.perf_counter()
    fn(inputs)
    first = (time.perf_counter() - start) * 1000
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        fn(inputs)
        samples.append((time.perf_counter() - start) * 1000)
    return first, statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed calls per path after the first")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--seq-len", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model = build_model()
    input_ids = torch.randint(0, model.config.vocab_size, (1, args.seq_len), generator=torch.Generator().manual_seed(1))

    def run(forward):
        with torch.no_grad():
            return forward(input_ids=input_ids).logits

    paths = {
        "eager": model,
        "inductor": torch.compile(model),
        "luminal": torch.compile(model, backend="luminal", options={"num_threads": args.threads}),
    }
    expected = run(model)
    rows = []
    for name, forward in paths.items():
        first, median = median_ms(lambda ids, f=forward: run(f), input_ids, args.steps)
        diff = (run(forward) - expected).abs().max().item()
        rows.append((name, first, median, diff))

    luminal_diff = rows[-1][3]
    print(f"\nLlama-style model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params, f32, "
          f"input [1, {args.seq_len}], {args.threads} threads, median of {args.steps} calls")
    print(f"{'path':<10} {'first call (ms)':>16} {'median (ms)':>12} {'vs eager':>9} {'max |logit diff|':>17}")
    eager_median = rows[0][2]
    for name, first, median, diff in rows:
        print(f"{name:<10} {first:>16.1f} {median:>12.2f} {eager_median / median:>8.2f}x {diff:>17.2e}")
    if luminal_diff > 1e-4:
        raise SystemExit(f"luminal's logits differ from eager by {luminal_diff:.2e} (> 1e-4)")
    print("\nluminal matches eager.")


if __name__ == "__main__":
    main()
