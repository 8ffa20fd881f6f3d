"""HF decoder families with a StaticCache through torch.compile(backend=luminal), against eager:
greedy decode for 32 steps, the cache updated in the caller's own memory (no copy of the cache
per token), one compile for every step, generate(), many calls, several models and threads."""

from __future__ import annotations

import resource
import threading

import pytest
import torch
import transformers
from transformers import StaticCache

import luminal
from conftest import CountingBackend, assert_close
from families import DECODERS, MAX_CACHE_LEN, MOE, VOCAB, build

DTYPES = [torch.float32, torch.bfloat16]
PROMPT_LEN = 5
DECODE_STEPS = 32
# bf16 logits drift over 32 steps of accumulated rounding in cache and activations: eager's own
# bf16 result differs from its f32 one by more than that, so this bounds luminal vs eager bf16.
BF16_LOGITS_TOLERANCE = 6e-2


def _step(model, cache, token: torch.Tensor, position: int) -> torch.Tensor:
    logits = model(
        input_ids=token, past_key_values=cache, use_cache=True, position_ids=torch.tensor([[position]])
    ).logits
    return logits[:, -1]


def _prefilled_caches(model, count: int) -> tuple[list[StaticCache], torch.Tensor]:
    """`count` caches after the same eager prefill at position 0, and its last logits."""
    prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(1))
    caches, logits = [], None
    for _ in range(count):
        cache = StaticCache(config=model.config, max_cache_len=MAX_CACHE_LEN)
        logits = model(input_ids=prompt, past_key_values=cache, use_cache=True).logits[:, -1]
        caches.append(cache)
    return caches, logits


def _cache_tensors(cache: StaticCache) -> list[torch.Tensor]:
    return [t for layer in cache.layers for t in (layer.keys, layer.values)]


def _assert_caches_equal(actual: StaticCache, expected: StaticCache, dtype: torch.dtype) -> None:
    for a, e in zip(_cache_tensors(actual), _cache_tensors(expected)):
        assert_close(a, e, dtype)


def _decode_against_eager(factory, dtype, graphs: int = 1) -> None:
    """`graphs`: how many graphs dynamo must trace for the 32 steps; luminal compiles each once."""
    torch._dynamo.utils.counters.clear()
    model = build(factory, dtype)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        (eager_cache, luminal_cache), logits = _prefilled_caches(model, 2)
        eager_token = luminal_token = logits.argmax(-1, keepdim=True)
        pointers = [t.data_ptr() for t in _cache_tensors(luminal_cache)]
        for step in range(DECODE_STEPS):
            position = PROMPT_LEN + step
            # bf16: near-ties may flip a greedy pick, so luminal is fed eager's token and only
            # the logits are compared; f32 decodes independently and must pick the same tokens.
            if dtype == torch.bfloat16:
                luminal_token = eager_token
            actual = _step(compiled, luminal_cache, luminal_token, position)
            expected = _step(model, eager_cache, eager_token, position)
            if dtype == torch.float32:
                assert_close(actual, expected, dtype)
            else:
                torch.testing.assert_close(
                    actual.float(), expected.float(), rtol=BF16_LOGITS_TOLERANCE, atol=BF16_LOGITS_TOLERANCE
                )
            eager_token = expected.argmax(-1, keepdim=True)
            luminal_token = actual.argmax(-1, keepdim=True)
            if dtype == torch.float32:
                assert torch.equal(luminal_token, eager_token), f"step {step}: token differs from eager"
            _assert_caches_equal(luminal_cache, eager_cache, dtype)
        assert [t.data_ptr() for t in _cache_tensors(luminal_cache)] == pointers
    assert len(backend.compiled) == graphs, f"{len(backend.compiled)} luminal compiles, {graphs} dynamo graphs"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("family", sorted(set(DECODERS) - {"gemma3"}))
def test_static_cache_decode_matches_eager(family, dtype):
    _decode_against_eager(DECODERS[family], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gemma3_static_cache_decode_matches_eager(dtype):
    """Gemma-3's StaticSlidingWindowLayer branches in Python on a Python-int length, so dynamo
    traces three graphs, each compiled once: the first step with the length specialised, the
    steps after it changed with the length a SymInt (automatic dynamic; its mask offset needs
    torch.sym_max and the `+= 1` is a SymInt graph output), and the steps after the 8-slot
    window filled (update() takes its roll branch)."""
    _decode_against_eager(DECODERS["gemma3"], dtype, graphs=3)


def test_sliding_window_decode_from_position_zero():
    """Regression: with Mistral's default sliding window, dynamo makes the cache layers' Python-int
    length a SymInt on the second step, when it is 1. Its carrier tensor must not let export
    specialise it to 1 (the third step raised a shape error). Decoding from position 0 traces two
    graphs, each compiled once."""
    from families import mistral_sliding

    torch._dynamo.utils.counters.clear()
    model = build(mistral_sliding, torch.float32)
    assert model.config.sliding_window > MAX_CACHE_LEN
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    token = torch.tensor([[3]])
    with torch.no_grad():
        caches = []
        for _ in range(2):
            cache = StaticCache(config=model.config, max_cache_len=MAX_CACHE_LEN)
            _step(model, cache, token, 0)  # allocates the cache tensors, outside any graph
            cache.reset()
            caches.append(cache)
        assert type(caches[0].layers[0]).__name__ == "StaticSlidingWindowLayer"
        eager_token = luminal_token = token
        for position in range(8):
            actual = _step(compiled, caches[0], luminal_token, position)
            expected = _step(model, caches[1], eager_token, position)
            assert_close(actual, expected)
            luminal_token, eager_token = actual.argmax(-1, keepdim=True), expected.argmax(-1, keepdim=True)
            assert torch.equal(luminal_token, eager_token)
            _assert_caches_equal(caches[0], caches[1], torch.float32)
    assert len(backend.compiled) == 2
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 2


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("family", sorted(MOE))
def test_moe_static_cache_decode_matches_eager(family, dtype):
    """Router topk, sort of the expert ids, histc + cumsum offsets, grouped_mm_fallback."""
    _decode_against_eager(MOE[family], dtype)


# Both CPU runtimes keep the rule: the generated-kernel one users run, and the interpreter that
# the other tests compare against.
RUNTIMES = ["cpu", "reference"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_cache_update_writes_rows_in_place(runtime):
    """The new K/V rows land in the caller's cache tensors and the runtime copies a row, not a
    cache: bytes copied per step = K/V rows + each layer's cumulative_length, + the logits on the
    reference runtime (the generated-kernel one writes the LM head's product, viewed as [1, 1,
    vocab], straight into the caller's logits)."""
    model = build(DECODERS["llama"], torch.float32)
    backend = CountingBackend(options={"runtime": runtime})
    compiled = torch.compile(model, backend=backend)
    config = model.config
    head_dim = config.hidden_size // config.num_attention_heads
    row_bytes = config.num_hidden_layers * 2 * config.num_key_value_heads * head_dim * 4
    with torch.no_grad():
        (cache,), logits = _prefilled_caches(model, 1)
        token = logits.argmax(-1, keepdim=True)
        pointers = [t.data_ptr() for t in _cache_tensors(cache)]
        for step in range(3):
            before = [t.clone() for t in _cache_tensors(cache)]
            out = _step(compiled, cache, token, PROMPT_LEN + step)
            assert backend.compiled[0].stats["runtime"] == runtime
            copied = backend.compiled[0].stats["bytes_copied_last_run"]
            expected = row_bytes + (out.numel() * 4 if runtime == "reference" else 0) + config.num_hidden_layers * 8
            assert copied == expected, f"copied {copied} bytes, expected {expected}"
            assert copied < cache.layers[0].keys.nbytes
            assert [t.data_ptr() for t in _cache_tensors(cache)] == pointers
            for old, new in zip(before, _cache_tensors(cache)):
                changed = (old != new).any(-1).squeeze(0)  # [heads, positions]
                assert changed[:, PROMPT_LEN + step].all() and changed.sum() == changed.shape[0]
            token = out.argmax(-1, keepdim=True)


def _update_then_read(cache, position, row):
    cache.index_copy_(0, position, row)
    return cache.sum(0)


def _read_old_after_update(cache, position, row):
    updated = cache.index_copy(0, position, row)  # the Scatter comes before the read of the old value
    old_total = cache.sum(0)
    cache.copy_(updated)
    return old_total


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("fn", [_update_then_read, _read_old_after_update], ids=["in_place", "old_value_read_later"])
def test_scatter_into_caller_buffer(fn, runtime):
    """Regression: the in-place Scatter must not run when a later node still reads the old value."""
    backend = CountingBackend(options={"runtime": runtime})
    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    for step in range(3):
        cache = torch.arange(24, dtype=torch.float32).reshape(6, 4)
        mine = cache.clone()
        pointer = mine.data_ptr()
        position, row = torch.tensor([step]), torch.full((1, 4), -1.0 - step)
        expected = fn(cache, position, row)
        actual = compiled(mine, position, row)
        assert_close(actual, expected)
        assert_close(mine, cache)
        assert mine.data_ptr() == pointer
    assert backend.compiled[0].stats["runtime"] == runtime
    copied = backend.compiled[0].stats["bytes_copied_last_run"]
    if fn is _update_then_read:
        # The row scattered, + the returned sum on the reference runtime (the generated-kernel one
        # writes the reduction's [1, 4], viewed as [4], straight into the caller's output).
        assert copied == 4 * 4 + (4 * 4 if runtime == "reference" else 0)
    else:
        assert copied >= cache.nbytes  # a fresh buffer, then the copy into the caller's tensor
    assert len(backend.compiled) == 1


def test_generate_matches_eager():
    model = build(DECODERS["llama"], torch.float32)
    prompt = torch.randint(0, VOCAB, (1, PROMPT_LEN), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = model.generate(prompt, max_new_tokens=12, do_sample=False, cache_implementation="static")
        backend = CountingBackend()
        model.forward = torch.compile(model.forward, backend=backend)
        actual = model.generate(prompt, max_new_tokens=12, do_sample=False, cache_implementation="static")
    assert torch.equal(actual, expected)
    # One graph for the prompt, one for every decode step: the shapes differ, the positions do not recompile.
    assert len(backend.compiled) == 2


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_thousand_calls_keep_weights_and_memory():
    model = build(DECODERS["llama"], torch.float32)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        (cache,), logits = _prefilled_caches(model, 1)
        token = logits.argmax(-1, keepdim=True)
        def same_step():
            # The cache writes at its own cumulative_length: rewind it, so every call rewrites
            # the same row with the same values.
            for layer in cache.layers:
                layer.cumulative_length.fill_(PROMPT_LEN)
            return _step(compiled, cache, token, PROMPT_LEN)

        first = same_step()
        for _ in range(100):
            same_step()
        rss_before = _rss_kib()
        for _ in range(900):
            out = same_step()
        rss_growth_kib = _rss_kib() - rss_before
    assert torch.equal(out, first)
    assert len(backend.compiled) == 1
    assert rss_growth_kib < 8 * 1024, f"resident memory grew by {rss_growth_kib} KiB over 900 calls"


def test_two_compiled_models_alternate():
    models = [build(DECODERS["llama"], torch.float32, seed=0), build(DECODERS["qwen3"], torch.float32, seed=1)]
    compiled = [torch.compile(m, backend="luminal") for m in models]
    with torch.no_grad():
        state = []
        for model in models:
            (eager_cache, luminal_cache), logits = _prefilled_caches(model, 2)
            state.append([eager_cache, luminal_cache, logits.argmax(-1, keepdim=True)])
        for step in range(6):
            for model, fast, s in zip(models, compiled, state):
                eager_cache, luminal_cache, token = s
                expected = _step(model, eager_cache, token, PROMPT_LEN + step)
                assert_close(_step(fast, luminal_cache, token, PROMPT_LEN + step), expected)
                s[2] = expected.argmax(-1, keepdim=True)


def test_four_threads_on_separate_caches():
    """The caches are per-call inputs, so threads with their own caches share no binding."""
    model = build(DECODERS["llama"], torch.float32)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    threads_count, steps = 4, 6
    with torch.no_grad():
        caches, logits = _prefilled_caches(model, threads_count + 1)
        warm_cache = caches.pop()
        token = logits.argmax(-1, keepdim=True)
        _step(compiled, warm_cache, token, PROMPT_LEN)  # compile before the threads start
        tokens = [torch.tensor([[(17 * i + 3) % VOCAB]]) for i in range(threads_count)]
        expected = []
        for i in range(threads_count):
            (cache,), _ = _prefilled_caches(model, 1)
            expected.append([_step(model, cache, tokens[i], PROMPT_LEN + s) for s in range(steps)])
        results: list[list[torch.Tensor]] = [[] for _ in range(threads_count)]
        errors: list[BaseException] = []

        def decode(i: int) -> None:
            try:
                with torch.no_grad():
                    for s in range(steps):
                        results[i].append(_step(compiled, caches[i], tokens[i], PROMPT_LEN + s))
            except BaseException as error:  # surfaced below: a thread's failure must fail the test
                errors.append(error)

        threads = [threading.Thread(target=decode, args=(i,)) for i in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors
    for i in range(threads_count):
        for actual, wanted in zip(results[i], expected[i]):
            assert_close(actual, wanted)
    assert len(backend.compiled) == 1


def test_wrong_input_shape_raises_user_error():
    """A call dynamo did not guard (the compiled model called directly) with a cache of another
    length is rejected with both shapes named, never answered."""
    model = build(DECODERS["llama"], torch.float32)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        (cache,), logits = _prefilled_caches(model, 1)
        token = logits.argmax(-1, keepdim=True)
        _step(compiled, cache, token, PROMPT_LEN)
    captured = {}

    def spy(gm, example_inputs, **kwargs):
        captured["args"] = example_inputs
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        _step(torch.compile(model, backend=spy), cache, token, PROMPT_LEN)
    args = list(captured["args"])
    index = next(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.shape[-2:] == (MAX_CACHE_LEN, 16))
    args[index] = torch.zeros(*args[index].shape[:-2], MAX_CACHE_LEN + 1, 16)
    # The input is named after its source (not export's args_N), so the user can tell which one.
    wanted = rf"input 'l_kwargs_past_key_values_layers_0_keys' has shape \[1, 2, {MAX_CACHE_LEN + 1}, 16\] but .*expects"
    with pytest.raises(luminal.UserError, match=wanted):
        backend.compiled[0](*args)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bert_encoder_matches_eager(dtype):
    from families import bert

    model = build(bert, dtype)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for seed in range(3):
            ids = torch.randint(0, VOCAB, (2, 12), generator=torch.Generator().manual_seed(seed))
            mask = torch.ones_like(ids)
            mask[1, 9:] = 0
            expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
            actual = compiled(input_ids=ids, attention_mask=mask).last_hidden_state
            assert_close(actual, expected, dtype)
    assert len(backend.compiled) == 1


def test_prefill_lengths_compile_once():
    model = build(DECODERS["llama"], torch.float32)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for length in (5, 17, 64):
            ids = torch.randint(0, VOCAB, (1, length), generator=torch.Generator().manual_seed(length))
            torch._dynamo.mark_dynamic(ids, 1)
            eager_cache = StaticCache(config=model.config, max_cache_len=80)
            luminal_cache = StaticCache(config=model.config, max_cache_len=80)
            expected = model(input_ids=ids, past_key_values=eager_cache, use_cache=True).logits
            actual = compiled(input_ids=ids, past_key_values=luminal_cache, use_cache=True).logits
            assert_close(actual, expected)
            _assert_caches_equal(luminal_cache, eager_cache, torch.float32)
    assert len(backend.compiled) == 1
