"""Shared helpers for luminal's pytest suites."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

import luminal


class CountingBackend:
    """luminal_backend that records each compiled model, so a test can prove luminal ran."""

    def __init__(self, options: dict | None = None) -> None:
        self.options = options
        self.compiled: list[luminal.CompiledModel] = []

    def __call__(self, gm, example_inputs, **kwargs):
        if self.options is not None:
            kwargs.setdefault("options", self.options)
        model = luminal.luminal_backend(gm, example_inputs, **kwargs)
        self.compiled.append(model)
        return model


@pytest.fixture
def counting_backend():
    return CountingBackend()


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test starts without cached compiles, so compile counts are the test's own."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype | None = None) -> None:
    """f32 to 1e-5; bf16/f16 to their own resolution; integers and bools exactly."""
    dtype = dtype or expected.dtype
    if not expected.is_floating_point():
        assert torch.equal(actual, expected), f"{actual} != {expected}"
        return
    tolerance = {torch.float32: 1e-5, torch.float64: 1e-7, torch.bfloat16: 2e-2, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)


def static_cache_greedy_tokens(forward, config, prompt: torch.Tensor, steps: int, max_cache_len: int,
                               **cache_kwargs) -> list[int]:
    """The greedy tokens `forward` (a causal LM, or its compiled form) generates from `prompt`
    through a fresh transformers StaticCache whose first use is inside `forward`, as a user who
    compiles before any eager step has it: the prompt, then one token per step, each at its
    explicit cache position. `cache_kwargs` go to StaticCache."""
    from transformers import StaticCache

    cache = StaticCache(config=config, max_cache_len=max_cache_len, **cache_kwargs)
    ids, tokens = prompt, []
    position = torch.arange(prompt.shape[1], device=prompt.device)
    for _ in range(steps):
        logits = forward(input_ids=ids, past_key_values=cache, cache_position=position, use_cache=True).logits
        ids = logits[:, -1:].argmax(-1)
        tokens.append(int(ids))
        position = position[-1:] + 1
    return tokens
