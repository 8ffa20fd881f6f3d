"""torchao-quantized models compiled by luminal: equal to eager's quantized model, with the
decode GEMVs reading the quantized weights themselves (no float copy of a weight per call).

int8 weight-only (per-channel scales), IntxWeightOnlyConfig's int4 with a scale and zero point
per group of 32 weights (held one per byte by torchao), and int8 weights with int8 activations
quantized per token at run time (aten::_int_mm)."""

from __future__ import annotations

import os
import re
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from families import DECODERS, MAX_CACHE_LEN, MOE, VOCAB, build  # noqa: E402
from greedy import forced_decode, greedy_decode  # noqa: E402

torchao = pytest.importorskip("torchao", reason="torchao==0.18.0 (scripts/install_deps.sh)")
from torchao.quantization import (  # noqa: E402
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    IntxWeightOnlyConfig,
    quantize_,
)
from torchao.quantization.granularity import PerGroup  # noqa: E402

import luminal  # noqa: E402
from conftest import CountingBackend  # noqa: E402


# config -> (how to make it, the label of the decode GEMV it becomes)
CONFIGS = {
    "int8": (Int8WeightOnlyConfig, "gemv (M = 1 matmul, weight streamed once)"),
    "int8dyn": (Int8DynamicActivationInt8WeightConfig, "gemv (M = 1 matmul, weight streamed once)"),
    "int4": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
             "gemv (M = 1 matmul, weight dequantized per group of 32)"),
}


# f32 outputs against eager's. Activations quantized at run time (int8dyn) move by a whole
# quantization step where a 1-ulp difference upstream (a sigmoid) crosses a rounding boundary.
TOLERANCE = {"int8": 1e-4, "int4": 1e-4, "int8dyn": 1e-2}


class MLP(torch.nn.Module):
    def __init__(self, hidden: int = 96, ffn: int = 224) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(hidden, ffn, bias=False)
        self.up = torch.nn.Linear(hidden, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=True)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 5], ids=["decode", "prefill"])
@pytest.mark.parametrize("cpu_isa", ["native", "avx2"])  # AVX-512 (VNNI) GEMVs where the CPU has them
def test_quantized_mlp_equals_eager(config, dtype, rows, cpu_isa, tmp_path):
    torch.manual_seed(0)
    model = MLP().to(dtype).eval()
    quantize_(model, CONFIGS[config][0]())
    x = torch.randn(1, rows, 96, dtype=dtype)
    backend = CountingBackend({"debug_dir": str(tmp_path), "cpu_isa": cpu_isa})
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend=backend)(x)
        actual_noncontiguous = torch.compile(model, backend=backend)(x.transpose(0, 1).contiguous().transpose(0, 1))
    tolerance = TOLERANCE[config] if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(actual_noncontiguous, expected, rtol=tolerance, atol=tolerance)
    assert backend.compiled[0].stats["fallback_ops"] == []
    # A prompt's few rows read the quantized weights too (the strip GEMVs, bf16 activations
    # widened to f32 once): no float copy of a weight per call.
    assert_gemvs_read_quantized_weights(tmp_path, config, 3, rows)


# (config, hidden, ffn, rows) of a bf16 prompt's MLP: a last strip of at most 8 rows, one strip,
# one and a half, two and a half, four, six and a quarter (tiles of four strips, then one), twelve
# and a half, sixteen (kQuantizedBf16PairGemvRows) and more; depths of a chunk of 256 and a part;
# 288 and 320 weight rows (blocks of 32 on AMX). Then int8 at depths 300 and 200, neither a
# multiple of 32 (on AMX the last dequantized chunk is zero-padded to a tile's depth), and 200
# and 300 weight rows (blocks of 32 and the rest one at a time).
BF16_PROMPT_SHAPES = [
    (config, 320, 288, rows) for config in ("int8", "int4") for rows in (8, 12, 17, 40, 64, 100, 200, 256, 257)
] + [("int8", 300, 200, rows) for rows in (5, 33)]


@pytest.mark.parametrize(("config", "hidden", "ffn", "rows"), BF16_PROMPT_SHAPES)
def test_bf16_prompts_of_every_strip_shape_equal_eager(config, hidden, ffn, rows, tmp_path):
    """A bf16 prompt through weight-only quantized Linears equals eager, as the strip GEMVs
    multiply it (bf16 pairs by vdpbf16ps where the CPU has AVX512-BF16, on AMX tiles where it has
    AMX-BF16, f32 elsewhere)."""
    torch.manual_seed(0)
    model = MLP(hidden=hidden, ffn=ffn).to(torch.bfloat16).eval()
    quantize_(model, CONFIGS[config][0]())
    x = torch.randn(1, rows, hidden, dtype=torch.bfloat16)
    backend = CountingBackend({"debug_dir": str(tmp_path)})
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend=backend)(x)
    torch.testing.assert_close(actual, expected, rtol=3e-2, atol=3e-2)
    assert backend.compiled[0].stats["fallback_ops"] == []
    # Up to kF32GemvRows (kQuantizedBf16PairGemvRows where the CPU multiplies bf16 pairs without
    # AMX) every Linear is the strips GEMV; past it the weight is widened, then multiplied.
    stats = (tmp_path / "cpu_stats.txt").read_text()
    bf16_pairs_without_amx = cpu_multiplies_bf16_pairs_without_amx()
    if rows > (256 if bf16_pairs_without_amx else 64):
        assert stats.count(PROMPT_GEMV[config]) == 0, stats
    elif config == "int8" or bf16_pairs_without_amx:
        # (int4's strips elsewhere: where ATen has a native bf16 GEMM or up to kHalfGemvRows,
        # passes/legalize_matmul.h)
        assert_gemvs_read_quantized_weights(tmp_path, config, 3, rows)
        assert (stats.count("on AMX tiles") == 3) == cpu_has_amx_bf16(), stats


@pytest.mark.parametrize("config", ["int8", "int4"])
@pytest.mark.parametrize("rows", [64, 65, 200, 256, 257])
def test_f32_prompts_read_quantized_weights_up_to_the_cpus_limit(config, rows, tmp_path):
    """An f32 prompt through weight-only quantized Linears equals eager. Up to the CPU's
    quantized f32 limit (kF32GemvRows, kZen5QuantizedF32GemvRows on a Zen 5: read from the
    runtime, luminal._C._cpu_gemv_rows) each Linear is the strips GEMV reading the quantized
    weight; past it the weight is widened, then multiplied."""
    torch.manual_seed(0)
    model = MLP(hidden=320, ffn=288).eval()
    quantize_(model, CONFIGS[config][0]())
    x = torch.randn(1, rows, 320)
    backend = CountingBackend({"debug_dir": str(tmp_path)})
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend=backend)(x)
    torch.testing.assert_close(actual, expected, rtol=TOLERANCE[config], atol=TOLERANCE[config])
    assert backend.compiled[0].stats["fallback_ops"] == []
    if rows <= luminal._C._cpu_gemv_rows()["quantized_f32"]:
        assert_gemvs_read_quantized_weights(tmp_path, config, 3, rows)
    elif config == "int4":
        assert (tmp_path / "cpu_stats.txt").read_text().count(PROMPT_GEMV[config]) == 0
    else:  # (the widened weight may take the f32 strips, whose GEMV has int8's label)
        assert any("= Matmul" not in line for line in int8_weight_readers(tmp_path))


def cpu_multiplies_bf16_pairs_without_amx() -> bool:
    """Whether luminal's kernels multiply a bf16 prompt's strips as bf16 pairs by vdpbf16ps here."""
    cpu = torch._C._cpu._get_cpu_capability()
    return bool(cpu.get("avx512_bf16")) and not cpu.get("amx_bf16")


def cpu_has_amx_bf16() -> bool:
    """Whether luminal's kernels multiply a bf16 prompt's strips on AMX tiles here."""
    cpu = torch._C._cpu._get_cpu_capability()
    return bool(cpu.get("avx512_bf16")) and bool(cpu.get("amx_bf16"))


@pytest.mark.parametrize("vnni", [True, False], ids=["u8s8", "s8s8"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 5], ids=["decode", "prefill"])
def test_int8dyn_both_int_mm_forms_equal_eager(vnni, dtype, rows, monkeypatch, tmp_path):
    """torchao picks its _int_mm form by the CPU: with AVX512-VNNI and no AMX (Zen 4, Ice Lake) it
    makes the activations uint8, x + 128, and subtracts 128 times the weight's column sums after;
    elsewhere it multiplies int8 by int8. Both forms, forced on any machine: equal to eager, and
    the GEMVs read the int8 weight once (the column sums, a second pass over the weight per call,
    fold away: passes/quantized_weights.h)."""
    intmm = pytest.importorskip("torchao.kernel.intmm")
    monkeypatch.setattr(intmm, "_cpu_is_vnni_supported", lambda: vnni)
    monkeypatch.setattr(intmm, "_cpu_is_amx_tile_supported", lambda: False)
    torch.manual_seed(0)
    model = MLP().to(dtype).eval()
    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    x = torch.randn(1, rows, 96, dtype=dtype)
    # A cache of its own: the export cache's key is dynamo's graph, the same for both forms (the
    # form is chosen under export, inside the weight's tensor subclass).
    backend = CountingBackend({"debug_dir": str(tmp_path / "debug"), "cache_dir": str(tmp_path / "cache")})
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend=backend)(x)
    tolerance = TOLERANCE["int8dyn"] if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)
    assert backend.compiled[0].stats["fallback_ops"] == []
    assert ("= Cast u8" in (tmp_path / "debug" / "0_input.txt").read_text()) == vnni
    assert_gemvs_read_quantized_weights(tmp_path / "debug", "int8dyn", 3, rows)


@pytest.mark.parametrize(("config", "options"), [(c, {}) for c in sorted(CONFIGS)] +
                         [("int4", {"pack_int4_weights": True})], ids=str)
def test_each_module_reads_its_own_quantized_weights(config, options):
    """Dynamo traces a module class once and reuses the graph for every module of the same shapes,
    passing each one's weights. A quantized weight's own data_ptr() is 0 for every one of them, so
    its binding follows its inner tensors, or every layer after the first reads the first's weights
    (with pack_int4_weights: or the first's packed copy; bf16 decode rows, where copies are made)."""
    torch.manual_seed(0)
    dtype = torch.bfloat16 if options else torch.float32
    layers = [torch.nn.Linear(64, 48).to(dtype) for _ in range(3)]
    for layer in layers:
        quantize_(layer, CONFIGS[config][0]())
    x = torch.randn(1 if options else 2, 64, dtype=dtype)
    tolerance = 3e-2 if options else TOLERANCE[config]
    backend = CountingBackend(options)
    with torch.no_grad():
        compiled = [torch.compile(layer, backend=backend) for layer in layers]
        for model in compiled:
            model(x)
        for layer, model in zip(layers, compiled):
            torch.testing.assert_close(model(x), layer(x), rtol=tolerance, atol=tolerance)
    assert backend.compiled


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_quantized_weights_stay_out_of_the_cached_archive(config, tmp_path):
    """Quantized weights are bound by pointer, never copied into the archive. The export cache
    keeps the archive on disk and serves it to any later model of the same shapes, so a weight
    copied into it would give a second model, compiled afresh, the first model's weights."""
    torch.manual_seed(0)
    first, second = (torch.nn.Linear(512, 1024) for _ in range(2))
    for layer in (first, second):
        quantize_(layer, CONFIGS[config][0]())
    x = torch.randn(1, 512)
    backend = CountingBackend({"cache_dir": str(tmp_path)})
    with torch.no_grad():
        torch.compile(first, backend=backend)(x)
        torch._dynamo.reset()
        actual = torch.compile(second, backend=backend)(x)
        torch.testing.assert_close(actual, second(x), rtol=TOLERANCE[config], atol=TOLERANCE[config])
    assert [model.stats["export_cache_hit"] for model in backend.compiled] == [False, True]
    assert backend.compiled[0].stats["archive_bytes"] < 512 * 1024 // 4  # the int8 weight alone is 512 KiB


# The GEMV of a prompt's rows, as cpu_stats.txt names it.
PROMPT_GEMV = {"int8": "gemv per row (a block of weight rows in cache across the rows)",
               "int8dyn": "gemv per row (a block of weight rows in cache across the rows)",
               "int4": "gemv per row (weight dequantized per group of 32)"}


def assert_gemvs_read_quantized_weights(debug_dir, config, linears, rows=1):
    """The step dumped in `debug_dir` (a decode step, or a prompt of `rows` rows) runs each of its
    `linears` quantized Linears as one GEMV, and nothing widens an int8 weight into a float copy first."""
    steps = (debug_dir / "cpu_stats.txt").read_text()
    gemv = CONFIGS[config][1] if rows == 1 else PROMPT_GEMV[config]
    if config == "int4":
        assert steps.count(gemv) == linears, steps
        return
    assert steps.count(gemv) >= linears, steps
    # After the passes no node reads an int8 weight but a Matmul.
    for line in int8_weight_readers(debug_dir):
        assert "= Matmul" in line, line


def int8_weight_readers(debug_dir):
    """The IR lines (after the passes, dumped in `debug_dir`) of the nodes reading an int8 weight."""
    ir = next(debug_dir.glob("*_dead_code.txt")).read_text().splitlines()
    int8_weights = {line.split()[0] for line in ir if "= Weight i8" in line}
    assert int8_weights
    readers = []
    for line in ir:
        operands = re.search(r"\((.*)\)\s*;", line)
        reads = {token for token in operands.group(1).split() if token.startswith("%")} if operands else set()
        if reads & int8_weights:
            readers.append(line)
    return readers


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "gpt2", "qwen3_moe"])
def test_quantized_static_cache_decode_equals_eager(config, dtype, family, tmp_path):
    """Every nn.Linear quantized, Qwen2's biased q/k/v too (GPT-2's Conv1D layers and Qwen3-MoE's
    3-D expert weights are not nn.Linear: torchao leaves them as they are)."""
    model = build({**DECODERS, **MOE}[family], dtype)
    linears = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    quantize_(model, CONFIGS[config][0]())
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(1))
    backend = CountingBackend({"debug_dir": str(tmp_path)})
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        tokens, last_logits, _ = greedy_decode(model, prompt, 32, MAX_CACHE_LEN)
        if config == "int8dyn" or dtype == torch.bfloat16:
            # Both fed eager's tokens: logits within rounding's (bf16) or a quantization step's
            # (int8dyn) effect, and the same token wherever eager's choice is not a near-tie.
            tolerance = 2e-2 if dtype == torch.float32 else 1e-1
            expected = forced_decode(model, prompt, tokens, MAX_CACHE_LEN)[0].float()
            actual, in_place = forced_decode(compiled, prompt, tokens, MAX_CACHE_LEN)
            torch.testing.assert_close(actual.float(), expected, rtol=0, atol=tolerance)
            top2 = expected.topk(2, dim=-1).values
            decided = top2[:, 0] - top2[:, 1] > 2 * tolerance
            assert torch.equal(actual.argmax(-1)[decided], expected.argmax(-1)[decided])
        else:
            luminal_tokens, logits, in_place = greedy_decode(compiled, prompt, 32, MAX_CACHE_LEN)
            assert luminal_tokens == tokens
            torch.testing.assert_close(logits, last_logits, rtol=1e-3, atol=1e-3)
    assert in_place, "the decode steps copied the KV cache"
    assert len(backend.compiled) == 2  # prefill and every decode step
    assert all(c.stats["fallback_ops"] == [] for c in backend.compiled)
    # The decode step was compiled last, so its dumps are the ones left.
    assert_gemvs_read_quantized_weights(tmp_path, config, linears)


def test_the_documented_guard_filter_reaches_dynamo_and_weights_stay_bound():
    """docs/quantization.md suggests dynamo's guard_filter_fn for quantized models, whose per-call
    subclass guards cost ~1 ms a step: torch.compile takes the option itself, luminal compiles
    as usual, and a weight written in place afterwards is still read."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 48)
    quantize_(layer, CONFIGS["int8"][0]())
    skip_module_guards = torch.compiler.skip_guard_on_all_nn_modules_unsafe
    compiled = torch.compile(layer, backend="luminal", options={"guard_filter_fn": skip_module_guards})
    x = torch.randn(2, 64)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), layer(x), rtol=TOLERANCE["int8"], atol=TOLERANCE["int8"])
        layer.bias.add_(1.0)
        torch.testing.assert_close(compiled(x), layer(x), rtol=TOLERANCE["int8"], atol=TOLERANCE["int8"])


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("rows", [1, 5], ids=["decode", "prefill"])
def test_quantized_mlp_called_under_inference_mode_equals_eager(config, rows, tmp_path):
    """Generation scripts often run under torch.inference_mode(). Export traced torchao's tensors
    there, where every tensor it makes is an inference tensor whose version counter torchao's
    views cannot set: every quantized model failed to compile ("Cannot set version_counter for
    inference tensor"). luminal traces such a graph outside inference mode, grad still off."""
    torch.manual_seed(0)
    model = MLP().to(torch.bfloat16).eval()
    quantize_(model, CONFIGS[config][0]())
    x = torch.randn(1, rows, 96, dtype=torch.bfloat16)
    backend = CountingBackend({"cache_dir": str(tmp_path)})  # an export of its own, not a cached one
    with torch.inference_mode():
        expected = model(x)
        actual = torch.compile(model, backend=backend)(x)
    torch.testing.assert_close(actual, expected, rtol=3e-2, atol=3e-2)
    assert backend.compiled[0].stats["fallback_ops"] == []


@pytest.mark.parametrize("config", ["int8", "int4"])
def test_quantized_decode_with_a_cache_made_under_inference_mode_equals_eager(config, tmp_path):
    """A StaticCache made under torch.inference_mode() (as a generation script running there makes
    it) holds inference tensors, which a trace outside inference_mode (where torchao's tensors
    must be traced) could not record an update to: such a decode failed to compile. Export now
    traces stand-ins for them and the runtime writes the caller's cache: the tokens, the last
    logits and the cache itself are eager's."""
    from transformers import StaticCache

    model = build(DECODERS["llama"], torch.float32)
    quantize_(model, CONFIGS[config][0]())
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(1))
    backend = CountingBackend({"cache_dir": str(tmp_path)})  # an export of its own, not a cached one
    compiled = torch.compile(model, backend=backend)
    results = []
    with torch.inference_mode():
        for fn in (model, compiled):
            cache = StaticCache(config=model.config, max_cache_len=MAX_CACHE_LEN)
            tokens, logits, in_place = greedy_decode(fn, prompt, 4, MAX_CACHE_LEN, cache)
            keys = cache.layers[0].keys
            assert in_place and keys.is_inference()
            results.append((tokens, logits, keys.clone()))
    (tokens, logits, keys), (luminal_tokens, luminal_logits, luminal_keys) = results
    assert luminal_tokens == tokens
    torch.testing.assert_close(luminal_logits, logits, rtol=TOLERANCE[config], atol=TOLERANCE[config])
    torch.testing.assert_close(luminal_keys, keys, rtol=TOLERANCE[config], atol=TOLERANCE[config])
    assert len(backend.compiled) == 2  # prefill and every decode step


class CountingLinear(torch.nn.Module):
    """A Linear that counts its calls in a buffer it updates in place."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 48)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return self.linear(x)


def test_quantized_model_updating_a_buffer_made_under_inference_mode_says_to_build_it_outside(tmp_path):
    """Module state made under torch.inference_mode() that the model updates cannot be traced
    outside it, as torchao's tensors must be: the error says to build the model outside
    inference_mode, and the model built so compiles under it."""
    x = torch.randn(2, 64)
    options = {"cache_dir": str(tmp_path)}  # an export of its own, not a cached one
    with torch.inference_mode():
        made_inside = CountingLinear()
    quantize_(made_inside, CONFIGS["int8"][0]())
    with torch.inference_mode():
        message = r"module state made under inference_mode.*build the model outside"
        with pytest.raises(luminal.UnsupportedError, match=message):
            torch.compile(made_inside, backend="luminal", options=options)(x)
    torch._dynamo.reset()
    torch.manual_seed(0)
    made_outside = CountingLinear()
    quantize_(made_outside, CONFIGS["int8"][0]())
    with torch.inference_mode():
        expected = made_outside(x)
        actual = torch.compile(made_outside, backend="luminal", options=options)(x)
    torch.testing.assert_close(actual, expected, rtol=TOLERANCE["int8"], atol=TOLERANCE["int8"])
    assert made_outside.calls.item() == 2


def packed_int4_bytes(*linears: torch.nn.Linear) -> int:
    """The bytes of the int4 pairs luminal's cpu runtime keeps for these Linears' weights with
    pack_int4_weights (half a byte a weight) where its kernels look int4 groups up (AVX512-BF16)."""
    cpu = torch._C._cpu._get_cpu_capability()
    if not cpu.get("avx512_bf16"):
        return 0
    return sum(linear.weight.shape.numel() // 2 for linear in linears)


def test_packed_int4_decode_gives_the_bytes_forms_bits_and_follows_in_place_writes():
    """With pack_int4_weights a bf16 decode step's int4 GEMVs read a copy of each weight packed two
    values a byte: the same bits as reading the int8 bytes (the same sums), the copy's bytes in
    stats. A write into a weight in place after compiling reaches the next call (torch counts the
    write in the tensor's version: its bytes are read, and from the call after, a new copy), and a
    value written outside int4's range drops that weight's copy for good."""
    torch.manual_seed(0)
    model = MLP(hidden=128, ffn=192).to(torch.bfloat16).eval()
    quantize_(model, CONFIGS["int4"][0]())
    x = torch.randn(1, 1, 128, dtype=torch.bfloat16)
    packed_backend, bytes_backend = CountingBackend({"pack_int4_weights": True}), CountingBackend()
    packed, bytes_form = torch.compile(model, backend=packed_backend), torch.compile(model, backend=bytes_backend)
    with torch.no_grad():
        assert torch.equal(packed(x), bytes_form(x))
        torch.testing.assert_close(packed(x), model(x), rtol=3e-2, atol=3e-2)
        stats = packed_backend.compiled[0].stats
        assert stats["packed_weight_bytes"] == packed_int4_bytes(model.gate, model.up, model.down)
        assert bytes_backend.compiled[0].stats["packed_weight_bytes"] == 0
        gate = model.gate.weight.qdata
        gate.copy_(torch.randint(-8, 8, gate.shape, dtype=torch.int8))
        assert torch.equal(packed(x), bytes_form(x)), "the packed copy of a weight written in place went stale"
        torch.testing.assert_close(packed(x), model(x), rtol=3e-2, atol=3e-2)
        assert torch.equal(packed(x), bytes_form(x))
        assert packed_backend.compiled[0].stats["packed_weight_bytes"] == stats["packed_weight_bytes"]
        model.down.weight.qdata[0, 0] = 100
        assert torch.equal(packed(x), bytes_form(x))
        assert packed_backend.compiled[0].stats["packed_weight_bytes"] == packed_int4_bytes(model.gate, model.up)


def test_packed_int4_static_cache_decode_gives_the_bytes_forms_tokens_and_logits():
    """A bf16 Llama quantized to int4 (every Linear's depth a multiple of 64): greedy decode with
    pack_int4_weights gives the bytes form's tokens and logits, bit for bit, from one compile per
    graph, the KV cache updated in place."""
    model = build(DECODERS["llama"], torch.bfloat16)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    quantize_(model, CONFIGS["int4"][0]())
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(1))
    packed_backend = CountingBackend({"pack_int4_weights": True})
    with torch.no_grad():
        bytes_form = greedy_decode(torch.compile(model, backend="luminal"), prompt, 16, MAX_CACHE_LEN)
        torch._dynamo.reset()
        tokens, logits, in_place = greedy_decode(torch.compile(model, backend=packed_backend), prompt, 16, MAX_CACHE_LEN)
    assert tokens == bytes_form[0]
    assert torch.equal(logits, bytes_form[1])
    assert in_place
    assert len(packed_backend.compiled) == 2  # prefill and every decode step
    # The decode step's Linears read packed copies; the prefill's prompt rows read the bytes.
    assert packed_backend.compiled[1].stats["packed_weight_bytes"] == packed_int4_bytes(*linears)
    assert packed_backend.compiled[0].stats["packed_weight_bytes"] == 0


def test_packed_int4_weights_refuse_inference_tensors():
    """Tensors made under torch.inference_mode() keep no version counter: a packed copy of one
    could go stale unseen after an in-place write, so pack_int4_weights names the weight and what
    to do instead."""
    if packed_int4_bytes(torch.nn.Linear(64, 64)) == 0:
        pytest.skip("int4 weights are packed where luminal's kernels have AVX512-BF16")
    torch.manual_seed(0)
    with torch.inference_mode():
        model = MLP(hidden=128, ffn=192).to(torch.bfloat16).eval()
        quantize_(model, CONFIGS["int4"][0]())
        x = torch.randn(1, 1, 128, dtype=torch.bfloat16)
        compiled = torch.compile(model, backend="luminal", options={"pack_int4_weights": True})
        with pytest.raises(luminal.UserError, match=r"inference tensor .*inference_mode.*without the option"):
            compiled(x)


def test_quantized_moe_experts_that_do_not_export_name_torchaos_code_and_what_to_do():
    """torchao 0.18 quantizes Qwen3-MoE's 3-D expert weights through FqnToConfig, and only
    transformers' per-expert loop (`_experts_implementation="eager"`) runs them in eager. That loop
    selects an expert with a data-dependent index, which Int8Tensor's select cannot take under
    torch.export (it indexes its zero points with the SymInt): an error that names neither torchao
    nor the weight unless luminal says where it was raised. When a torchao release traces it, this
    test fails and the quantized experts should join test_quantized_static_cache_decode_equals_eager."""
    from torchao.quantization import FqnToConfig

    model = build(MOE["qwen3_moe"], torch.float32)
    model.config._experts_implementation = "eager"
    experts = r"re:.*experts\.(gate_up_proj|down_proj)"
    config = FqnToConfig({experts: Int8WeightOnlyConfig(), "_default": Int8WeightOnlyConfig()})
    quantize_(model, config, filter_fn=None)
    assert type(model.model.layers[0].mlp.experts.gate_up_proj).__name__ == "Int8Tensor"
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model(prompt)  # eager runs it
        with pytest.raises(Exception) as info:
            torch.compile(model, backend="luminal")(prompt)
    error = getattr(info.value, "inner_exception", info.value)
    assert isinstance(error, luminal.UnsupportedError), repr(error)
    message = str(error)
    assert message.startswith("torch.export could not export the graph luminal was given (raised in"), message
    assert re.search(r"raised in torchao/quantization/\S+int8_tensor\.py:\d+", message), message
    assert "tensor subclass the graph reads: Int8Tensor" in message and "nn.Linear" in message, message
