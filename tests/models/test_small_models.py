"""Whole models through torch.compile(backend=luminal) against eager: an MLP, a tiny GPT-2 and a
tiny Llama (no KV cache), in f32 and bf16, each called three times with different inputs."""

from __future__ import annotations

import pytest
import torch
import transformers

from conftest import CountingBackend, assert_close

DTYPES = [torch.float32, torch.bfloat16]


def tiny_gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=256, n_positions=64, use_cache=False)
    return transformers.GPT2LMHeadModel(config)


def tiny_llama() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=256,
        max_position_embeddings=64,
        attn_implementation="eager",
        use_cache=False,
    )
    return transformers.LlamaForCausalLM(config)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
        )

    def forward(self, x):
        return torch.log_softmax(self.layers(x), dim=-1)


def _check_three_calls(model, make_input, dtype):
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        for seed in range(3):
            inputs = make_input(seed)
            expected = model(**inputs) if isinstance(inputs, dict) else model(inputs)
            actual = compiled(**inputs) if isinstance(inputs, dict) else compiled(inputs)
            if hasattr(expected, "logits"):
                expected, actual = expected.logits, actual.logits
            assert_close(actual, expected, dtype)
    assert len(backend.compiled) == 1, "luminal compiled more than once (or never ran)"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mlp(dtype):
    torch.manual_seed(0)
    model = MLP().to(dtype).eval()
    _check_three_calls(model, lambda s: torch.randn(8, 32, generator=torch.Generator().manual_seed(s)).to(dtype), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("build", [tiny_gpt2, tiny_llama], ids=["gpt2", "llama"])
def test_language_model(build, dtype):
    torch.manual_seed(0)
    model = build().to(dtype).eval()

    def make_input(seed):
        ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(seed))
        return {"input_ids": ids}

    _check_three_calls(model, make_input, dtype)
