"""Tensor-parallel greedy decoding with luminal: each process holds half of every layer.

    torchrun --nproc-per-node 2 examples/tp_decode.py [--tokens N]

Builds a small Llama from a config with random weights (nothing is downloaded), saves it, loads
it back with transformers' tp_plan="auto" (every rank its shard), compiles it with luminal and
decodes greedily into a StaticCache. Rank 0 prints the tokens, whether they equal one process's
eager tokens, and the compiled graphs' stats (collectives per step, ATen fallbacks).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch
import torch.distributed as dist
import transformers
from transformers import AutoModelForCausalLM, StaticCache

import luminal


def greedy(model, prompt: torch.Tensor, tokens: int) -> list[int]:
    cache = StaticCache(config=model.config, max_cache_len=prompt.shape[1] + tokens)
    logits = model(input_ids=prompt, past_key_values=cache, use_cache=True).logits
    out = [int(logits[0, -1].argmax())]
    for step in range(tokens - 1):
        position = prompt.shape[1] + step
        logits = model(
            input_ids=torch.tensor([[out[-1]]]),
            past_key_values=cache,
            use_cache=True,
            position_ids=torch.tensor([[position]]),
            cache_position=torch.tensor([position]),
        ).logits
        out.append(int(logits[0, -1].argmax()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    dist.init_process_group("gloo")  # torchrun's environment names the group; "nccl" on GPUs
    rank = dist.get_rank()
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // dist.get_world_size()))
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=4, vocab_size=2048, max_position_embeddings=512,
    )
    with tempfile.TemporaryDirectory() as shared:
        # Every rank builds the same seeded model; rank 0's copy is the one saved and loaded.
        path = [os.path.join(shared, "model")]
        dist.broadcast_object_list(path, src=0)
        if rank == 0:
            transformers.LlamaForCausalLM(config).save_pretrained(path[0])
        dist.barrier()
        with torch.no_grad():
            one_process = AutoModelForCausalLM.from_pretrained(path[0]).eval()
            sharded = AutoModelForCausalLM.from_pretrained(path[0], tp_plan="auto").eval()
            dist.barrier()  # every rank has read the files before rank 0 removes them
    prompt = torch.tensor([[1, 17, 233, 42, 108, 7, 191, 64]])
    graphs: list[luminal.CompiledModel] = []

    def backend(gm, example_inputs):
        graphs.append(luminal.luminal_backend(gm, example_inputs))
        return graphs[-1]

    compiled = torch.compile(sharded, backend=backend)
    with torch.no_grad():
        expected = greedy(one_process, prompt, args.tokens)
        start = time.perf_counter()
        tokens = greedy(compiled, prompt, args.tokens)
        seconds = time.perf_counter() - start
    if rank == 0:
        print(f"tokens: {tokens}")
        print(f"equal to one process's eager tokens: {tokens == expected}")
        print(f"{args.tokens} tokens in {seconds:.2f} s, compile included")
        for name, graph in zip(["prefill", "decode"], graphs):
            stats = graph.stats
            print(f"{name} graph: {stats['collectives']} collectives per call, ATen fallbacks: {stats['fallback_ops']}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
