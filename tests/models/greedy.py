"""Greedy decoding into a StaticCache, as the model tests and the distributed tests run it."""

from __future__ import annotations

import torch


def greedy_decode(
    model, prompt: torch.Tensor, steps: int, max_cache_len: int, cache=None
) -> tuple[list[int], torch.Tensor, bool]:
    """Tokens after a batched prefill of `prompt` and `steps` decode steps, the last step's
    logits, and whether the decode steps kept the cache in the tensors the prefill filled. The
    cache is `cache` where given (for a caller that reads it afterwards), else a new StaticCache."""
    from transformers import StaticCache

    if cache is None:
        cache = StaticCache(config=model.config, max_cache_len=max_cache_len)
    logits = model(input_ids=prompt, past_key_values=cache, use_cache=True).logits[:, -1]
    tokens = [int(logits.argmax(-1))]
    pointers = [t.data_ptr() for layer in cache.layers for t in (layer.keys, layer.values)]
    for step in range(steps):
        position = prompt.shape[1] + step
        logits = model(
            input_ids=torch.tensor([[tokens[-1]]]),
            past_key_values=cache,
            use_cache=True,
            position_ids=torch.tensor([[position]]),
            cache_position=torch.tensor([position]),
        ).logits[:, -1]
        tokens.append(int(logits.argmax(-1)))
    in_place = pointers == [t.data_ptr() for layer in cache.layers for t in (layer.keys, layer.values)]
    return tokens, logits, in_place


def forced_decode(model, prompt: torch.Tensor, tokens: list[int], max_cache_len: int) -> tuple[torch.Tensor, bool]:
    """The logits [len(tokens), vocab] of a prefill of `prompt` and decode steps fed `tokens`
    (another model's greedy tokens), and whether the cache stayed in place. Two models compared
    this way see the same inputs at every step even where a near-tie flips one's argmax."""
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=max_cache_len)
    logits = [model(input_ids=prompt, past_key_values=cache, use_cache=True).logits[:, -1]]
    pointers = [t.data_ptr() for layer in cache.layers for t in (layer.keys, layer.values)]
    for step, token in enumerate(tokens[:-1]):
        position = prompt.shape[1] + step
        logits.append(
            model(
                input_ids=torch.tensor([[token]]),
                past_key_values=cache,
                use_cache=True,
                position_ids=torch.tensor([[position]]),
                cache_position=torch.tensor([position]),
            ).logits[:, -1]
        )
    in_place = pointers == [t.data_ptr() for layer in cache.layers for t in (layer.keys, layer.values)]
    return torch.cat(logits), in_place
