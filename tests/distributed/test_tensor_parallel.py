"""transformers' tensor parallelism (tp_plan="auto") compiled by luminal on 2 processes: prefill
and StaticCache greedy decode give one-process eager's tokens, with one compile per rank for all
decode steps and each rank's KV cache updated in place."""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.distributed as dist

from ranks import run_ranks

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from families import DECODERS, MAX_CACHE_LEN, MOE, VOCAB  # noqa: E402
from greedy import greedy_decode  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built in")

PROMPT_LEN = 5
DECODE_STEPS = 16
FAMILIES = {"llama": DECODERS["llama"], "qwen3": DECODERS["qwen3"], "qwen3_moe": MOE["qwen3_moe"]}


def _tp_decode(rank: int, world: int, path: str) -> dict:
    import luminal
    from transformers import AutoModelForCausalLM

    compiles = []

    def backend(gm, example_inputs):
        model = luminal.luminal_backend(gm, example_inputs)
        compiles.append(model)
        return model

    prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        one_process = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        expected, expected_logits, _ = greedy_decode(one_process, prompt, DECODE_STEPS, MAX_CACHE_LEN)
        sharded = AutoModelForCausalLM.from_pretrained(path, tp_plan="auto", dtype=torch.float32).eval()
        compiled = torch.compile(sharded, backend=backend)
        tokens, logits, cache_in_place = greedy_decode(compiled, prompt, DECODE_STEPS, MAX_CACHE_LEN)
    return {
        "tokens_equal": tokens == expected,
        "tokens": (tokens, expected),
        "logits_error": (logits - expected_logits).abs().max().item(),
        "compiles": len(compiles),
        "fallback_ops": sorted({op for m in compiles for op in m.stats["fallback_ops"]}),
        "collectives": sum(m.stats.get("collectives", 0) for m in compiles),
        "cache_in_place": cache_in_place,
        "bytes_copied_last_decode": compiles[-1].stats["bytes_copied_last_run"],
        # One layer's K cache on this rank: a decode step that copied a cache would copy this much.
        "cache_tensor_bytes": MAX_CACHE_LEN
        * sharded.config.num_key_value_heads
        // world
        * getattr(sharded.config, "head_dim", sharded.config.hidden_size // sharded.config.num_attention_heads)
        * 4,
    }


@pytest.mark.parametrize("family", list(FAMILIES))
def test_tp_plan_auto_decode_equals_one_process_eager(family, tmp_path):
    torch.manual_seed(0)
    FAMILIES[family]().save_pretrained(tmp_path)
    for result in run_ranks(_tp_decode, str(tmp_path), timeout_s=600):
        assert result["tokens_equal"], result["tokens"]
        assert result["logits_error"] < 1e-3, result
        # One graph for the prefill and one for every decode step.
        assert result["compiles"] == 2, result
        assert result["fallback_ops"] == [], result
        assert result["collectives"] > 0, result
        assert result["cache_in_place"], result
        assert result["bytes_copied_last_decode"] < result["cache_tensor_bytes"], result


# ---- torch's own tensor parallelism on a transformer block ----


class Block(torch.nn.Module):
    """Pre-norm attention-free block: the parallel styles' three placements in one module."""

    def __init__(self, hidden: int = 32, ffn: int = 64) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden)
        self.up = torch.nn.Linear(hidden, ffn)
        self.down = torch.nn.Linear(ffn, hidden)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
        return self.out(x)


def _parallelize_module(rank: int, world: int, sequence_parallel: bool) -> dict:
    import luminal
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )
    from torch.distributed.tensor import Replicate, Shard

    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        expected = block(x)
        mesh = init_device_mesh("cpu", (world,))
        plan = {"up": ColwiseParallel(), "down": RowwiseParallel(), "out": ColwiseParallel(output_layouts=Replicate())}
        if sequence_parallel:
            # The norm runs on this rank's half of the sequence; `up` gathers it.
            plan["norm"] = SequenceParallel()
            plan["up"] = ColwiseParallel(input_layouts=Shard(1))
            plan["down"] = RowwiseParallel(output_layouts=Shard(1))
            plan["out"] = ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())
        parallelize_module(block, mesh, plan)
        compiles = []

        def backend(gm, example_inputs):
            model = luminal.luminal_backend(gm, example_inputs)
            compiles.append(model)
            return model

        compiled = torch.compile(block, backend=backend)
        local_x = x.chunk(world, dim=1)[rank] if sequence_parallel else x
        actual = compiled(local_x)
        eager = block(local_x)
    actual = actual.full_tensor() if hasattr(actual, "full_tensor") else actual
    eager = eager.full_tensor() if hasattr(eager, "full_tensor") else eager
    return {
        "error": (actual - expected).abs().max().item(),
        "eager_error": (eager - expected).abs().max().item(),
        "compiles": len(compiles),
        "fallback_ops": sorted({op for m in compiles for op in m.stats["fallback_ops"]}),
        "collectives": sum(m.stats["collectives"] for m in compiles),
    }


@pytest.mark.parametrize("sequence_parallel", [False, True], ids=["colwise-rowwise", "sequence-parallel"])
def test_parallelize_module_block_equals_one_process_eager(sequence_parallel):
    for result in run_ranks(_parallelize_module, sequence_parallel):
        assert result["eager_error"] < 1e-4, result  # the plan itself is right
        assert result["error"] < 1e-4, result
        assert result["compiles"] == 1 and result["fallback_ops"] == [], result
        assert result["collectives"] > 0, result
