"""Symbolic shapes through torch.compile(backend=luminal) against eager: prompts of several lengths
under dynamic=True and automatic dynamic, and decoding with transformers' DynamicCache, whose
K/V tensors grow by one row per step (each a new shape, one symbol per cache tensor)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from conftest import CountingBackend, assert_close
from families import DECODERS, VOCAB, build

PROMPT_LENGTHS = (5, 17, 64)
DECODE_STEPS = 8


class SymbolRecordingBackend(CountingBackend):
    """Also records, per compile, whether dynamo handed luminal a graph with a symbolic dim."""

    def __init__(self) -> None:
        super().__init__()
        self.symbolic: list[bool] = []

    def __call__(self, gm, example_inputs, **kwargs):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        shapes = [getattr(n.meta.get("example_value"), "shape", ()) for n in placeholders]
        self.symbolic.append(any(isinstance(d, torch.SymInt) for shape in shapes for d in shape))
        return super().__call__(gm, example_inputs, **kwargs)


def _prompt(length: int, batch: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(length))


def _prefill_lengths(family: str, dynamic: bool | None) -> SymbolRecordingBackend:
    torch._dynamo.utils.counters.clear()
    model = build(DECODERS[family], torch.float32)
    backend = SymbolRecordingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    with torch.no_grad():
        for length in PROMPT_LENGTHS:
            # The model's default use_cache=True: the prefill fills and returns a DynamicCache.
            ids = _prompt(length)
            expected, actual = model(input_ids=ids), compiled(input_ids=ids)
            assert_close(actual.logits, expected.logits)
            assert actual.past_key_values.get_seq_length() == length
            for layer, eager_layer in zip(actual.past_key_values.layers, expected.past_key_values.layers):
                assert_close(layer.keys, eager_layer.keys)
                assert_close(layer.values, eager_layer.values)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == len(backend.compiled)
    return backend


@pytest.mark.parametrize("family", sorted(DECODERS))
def test_dynamic_true_prefill_compiles_once(family):
    """dynamic=True: the sequence length is symbolic from the first compile, and dynamo passes
    every Python float of the model (RMSNorm eps, attention scaling) as a 0-d tensor read with
    `.item()`. luminal specialises those (with a dynamo guard, see test_changed_float_recompiles):
    as unbacked floats in export, SDPA's `scale` could not be guarded on."""
    backend = _prefill_lengths(family, dynamic=True)
    # Gemma-3's sliding layers keep `keys[:, :, -sliding_window + 1:]` of the prompt: the slice
    # guards the length against the window (8), so 5 and 17 are two graphs; 17 and 64 share one.
    graphs = 2 if family == "gemma3" else 1
    assert len(backend.compiled) == graphs, f"{len(backend.compiled)} luminal compiles for {PROMPT_LENGTHS}"
    assert backend.symbolic == [True] * graphs


def test_automatic_dynamic_prefill_compiles_twice():
    """No dynamic= flag: the first length compiles static; the second marks the dim dynamic and
    its compile serves every later length."""
    backend = _prefill_lengths("llama", dynamic=None)
    assert len(backend.compiled) == 2
    assert backend.symbolic == [False, True]


class ScaledAttention(torch.nn.Module):
    """Python floats as module attributes, used the way HF decoders use theirs: an eps added to a
    tensor and SDPA's `scale`."""

    def __init__(self) -> None:
        super().__init__()
        self.eps = 1e-6
        self.scale = 0.25

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return torch.nn.functional.scaled_dot_product_attention(x, x, x, scale=self.scale)


def test_changed_float_recompiles():
    """The floats luminal specialises under dynamic=True are guarded: changing one after the
    compile recompiles rather than running with the old constant."""
    model = ScaledAttention()
    backend = SymbolRecordingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    for length in (6, 9):
        x = torch.randn(2, 4, length, 16, generator=torch.Generator().manual_seed(length))
        assert_close(compiled(x), model(x))
    assert len(backend.compiled) == 1
    model.scale = 0.5  # dynamo itself guards this one: tracing SDPA specialised its scale
    assert_close(compiled(x), model(x))
    model.eps = 0.25  # luminal's guard: dynamo left the eps symbolic
    assert_close(compiled(x), model(x))
    assert len(backend.compiled) == 3
    assert backend.symbolic == [True, True, True]


def _attend_with_cache(query, key_cache, value_cache, key, value, mask):
    key = torch.cat([key_cache, key], dim=-2)
    value = torch.cat([value_cache, value], dim=-2)
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)


def test_attention_over_growing_cache_tensors_compiles_once():
    """The DynamicCache pattern in small: dynamo gives the K cache, the V cache and the mask
    a symbol each, and SDPA's meta never relates them, so export would keep three unrelated
    key lengths that the core cannot contract. luminal checks them equal before SDPA."""
    backend = SymbolRecordingBackend()
    compiled = torch.compile(_attend_with_cache, backend=backend, fullgraph=True)
    for cached in (3, 8, 20):
        g = torch.Generator().manual_seed(cached)
        query, key, value = (torch.randn(1, 2, 2, 16, generator=g) for _ in range(3))
        key_cache, value_cache = (torch.randn(1, 2, cached, 16, generator=g) for _ in range(2))
        mask = torch.randn(1, 1, 2, cached + 2, generator=g)
        for tensor, dim in ((key_cache, 2), (value_cache, 2), (mask, 3)):
            torch._dynamo.mark_dynamic(tensor, dim)
        args = (query, key_cache, value_cache, key, value, mask)
        assert_close(compiled(*args), _attend_with_cache(*args))
    assert len(backend.compiled) == 1
    assert backend.symbolic == [True]


def _dynamic_cache_decode(dynamic: bool | None) -> SymbolRecordingBackend:
    """Prefill then DECODE_STEPS greedy steps with a DynamicCache, compiled vs eager (f32, so
    luminal decodes on its own tokens and must pick eager's)."""
    torch._dynamo.utils.counters.clear()
    model = build(DECODERS["llama"], torch.float32)
    backend = SymbolRecordingBackend()
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    eager_cache, luminal_cache = DynamicCache(config=model.config), DynamicCache(config=model.config)
    with torch.no_grad():
        eager_token = luminal_token = _prompt(5)
        for step in range(DECODE_STEPS + 1):
            expected = model(input_ids=eager_token, past_key_values=eager_cache, use_cache=True)
            actual = compiled(input_ids=luminal_token, past_key_values=luminal_cache, use_cache=True)
            assert actual.past_key_values is luminal_cache
            assert_close(actual.logits[:, -1], expected.logits[:, -1])
            eager_token = expected.logits[:, -1].argmax(-1, keepdim=True)
            luminal_token = actual.logits[:, -1].argmax(-1, keepdim=True)
            assert torch.equal(luminal_token, eager_token), f"step {step}: token differs from eager"
            assert luminal_cache.get_seq_length() == eager_cache.get_seq_length() == 5 + step
            for layer, eager_layer in zip(luminal_cache.layers, eager_cache.layers):
                assert_close(layer.keys, eager_layer.keys)
                assert_close(layer.values, eager_layer.values)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == len(backend.compiled)
    return backend


def test_dynamic_cache_decode_dynamic_true():
    """dynamic=True: one graph for the prompt (an empty cache) and one for every decode step."""
    backend = _dynamic_cache_decode(dynamic=True)
    assert len(backend.compiled) == 2
    assert backend.symbolic == [True, True]


def test_dynamic_cache_decode_automatic_dynamic():
    """No dynamic= flag: the prompt, the first decode step (a cache of 5, static), then one graph
    with the cache length symbolic for every later step. The four K/V tensors get four symbols
    from dynamo; luminal tells export that SDPA needs K's and V's lengths equal."""
    backend = _dynamic_cache_decode(dynamic=None)
    assert len(backend.compiled) == 3
    assert backend.symbolic == [False, False, True]


def test_generate_with_dynamic_cache_and_padding_matches_eager():
    """generate()'s default DynamicCache with a left-padded batch: the SDPA mask grows with the
    cache too, and carries its own symbol."""
    model = build(DECODERS["llama"], torch.float32)
    prompt = _prompt(6, batch=2)
    mask = torch.ones_like(prompt)
    mask[1, :2] = 0
    with torch.no_grad():
        expected = model.generate(prompt, attention_mask=mask, max_new_tokens=10, do_sample=False)
        backend = CountingBackend()
        model.forward = torch.compile(model.forward, backend=backend)
        actual = model.generate(prompt, attention_mask=mask, max_new_tokens=10, do_sample=False)
    assert torch.equal(actual, expected)
    assert len(backend.compiled) == 3  # the prompt, the first step, every later step
