"""The CUDA runtime. Without a GPU: the factory capsule, the errors for tensors on the wrong
device, and NVRTC compiling the runtime's own copy kernels. With one (torch.cuda.is_available()),
models compiled with luminal on CUDA tensors match eager, decode with a StaticCache in place,
and report kernel errors as exceptions; see docs/cuda.md for running them on a GPU machine."""

from __future__ import annotations

import luminal
import pytest
import torch
from conftest import static_cache_greedy_tokens
from luminal import _C
from nvrtc_check import ARCHS, DECODERS, MAX_CACHE_LEN, MOE, bert, build, check_model, needs_nvrtc

needs_cuda_build = pytest.mark.skipif(
    not _C.has_cuda, reason="luminal was built without the CUDA runtime (LUMINAL_CUDA=OFF)"
)
needs_gpu = pytest.mark.skipif(
    not (_C.has_cuda and torch.cuda.is_available()),
    reason="needs a CUDA GPU, a CUDA build of torch and luminal built with LUMINAL_CUDA=ON",
)


@needs_cuda_build
def test_cuda_factory_capsule_needs_no_gpu_to_create():
    info = _C.factory_info(_C.cuda_factory_capsule())
    assert info == {"name": "cuda", "device": "cuda", "runtime": "cuda"}


@needs_cuda_build
def test_cpu_tensors_given_to_the_cuda_runtime_are_an_error_not_a_fallback():
    backend = luminal.register_backend(_C.cuda_factory_capsule())
    model = torch.nn.Linear(4, 3)
    compiled = torch.compile(model, backend=backend)
    with pytest.raises(luminal.UserError, match="is on device 'cpu' but this compiled model runs on 'cuda'"):
        compiled(torch.randn(2, 4))


@pytest.mark.parametrize("runtime", ["cpu", "reference"])
def test_a_cpu_runtime_option_with_cuda_tensors_names_the_conflict(monkeypatch, runtime):
    from luminal import backend

    monkeypatch.setattr(backend, "_inputs_device", lambda inputs: torch.device("cuda"))
    with pytest.raises(luminal.UserError, match="runs on the CPU, but the model's tensors are on CUDA"):
        backend.default_factory([], runtime)


@needs_cuda_build
def test_cuda_inputs_pick_the_cuda_runtime(monkeypatch):
    from luminal import backend

    monkeypatch.setattr(backend, "_inputs_device", lambda inputs: torch.device("cuda"))
    assert _C.factory_info(backend.default_factory([]))["name"] == "cuda"


@needs_nvrtc
def test_the_strided_copy_kernels_compile_for_every_arch():
    # The runtime's one hand-written kernel (copies of strided views) goes through the same NVRTC.
    report = _C.cuda_check_runtime_kernels(ARCHS)
    assert report, "no runtime kernels checked"
    for name, images in report.items():
        for arch, image in images.items():
            assert image["ok"] and not image["warnings"], f"{name} for {arch}:\n{image['log']}"


@needs_nvrtc
def test_a_llama_decode_step_is_one_cuda_graph_with_the_cache_updated_in_place():
    # What the runtime would do with a StaticCache decode step, planned without a GPU: no step
    # needs the host, so the whole step replays as one CUDA graph, and every layer's K and V
    # updates may write into the caller's cache.
    from transformers import StaticCache

    model = build(DECODERS["llama"], torch.float32)
    cache = StaticCache(config=model.config, max_cache_len=MAX_CACHE_LEN)
    with torch.no_grad():
        model(input_ids=torch.tensor([[3, 4, 5]]), past_key_values=cache, use_cache=True)
    report = check_model(
        model,
        {
            "input_ids": torch.tensor([[7]]),
            "past_key_values": cache,
            "use_cache": True,
            "position_ids": torch.tensor([[3]]),
        },
    )
    assert report["host_steps"] == []
    assert report["segments"] == 1
    assert report["in_place_updates"] == 2 * model.config.num_hidden_layers


@needs_nvrtc
def test_a_moe_prompt_leaves_graphs_only_for_its_group_sizes():
    model = build(MOE["qwen3_moe"], torch.float32)
    report = check_model(model, {"input_ids": torch.randint(0, 256, (1, 6)), "use_cache": False})
    # Two grouped matmuls per layer (gate-up, down), each reading its group sizes on the host;
    # the steps between them replay as graphs.
    host = report["host_steps"]
    assert len(host) == 2 * model.config.num_hidden_layers, host
    assert all(what.startswith("grouped matmul from ") for what in host), host
    assert report["segments"] == len(host) + 1


@needs_nvrtc
def test_bert_projection_biases_are_gemm_epilogues():
    # BERT's query, key and value projections add their bias and reshape: the add is cuBLASLt's
    # bias epilogue, not a kernel. (The others fuse their bias with GELU or the residual.)
    model = build(bert, torch.float32)
    report = check_model(model, {"input_ids": torch.randint(0, 256, (2, 12))})
    assert report["bias_epilogues"] >= 3 * model.config.num_hidden_layers, report["bias_epilogues"]


# ---- on a GPU ----


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    tolerance = {torch.float32: 2e-4, torch.bfloat16: 3e-2, torch.float16: 5e-3}[expected.dtype]
    torch.testing.assert_close(actual, expected, atol=tolerance, rtol=tolerance)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_mlp_matches_eager(dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 32))
    model = model.to("cuda", dtype)
    compiled = torch.compile(model, backend=luminal.luminal_backend)
    for rows in (1, 7, 33):
        x = torch.randn(rows, 64, device="cuda", dtype=dtype)
        _close(compiled(x), model(x))
        _close(compiled(x), model(x))  # the second call replays the CUDA graphs


@needs_gpu
def test_non_contiguous_inputs_and_outputs_through_views():
    def f(x, y):
        return (x.transpose(0, 1) @ y).softmax(-1), x[:, ::2] * 2

    x = torch.randn(16, 8, device="cuda")[:, :6]
    y = torch.randn(16, 5, device="cuda")
    compiled = torch.compile(f, backend=luminal.luminal_backend)
    for got, want in zip(compiled(x, y), f(x, y)):
        _close(got, want)


@needs_gpu
def test_a_constant_made_inside_the_model_is_uploaded_to_the_gpu():
    # The archive carries this constant in host memory; the runtime copies it to the device.
    def f(x):
        return x * torch.tensor([1.0, 2.0, 3.0], device=x.device) + 1

    x = torch.randn(4, 3, device="cuda")
    _close(torch.compile(f, backend=luminal.luminal_backend)(x), f(x))


@needs_gpu
def test_moe_prompt_matches_eager():
    # Grouped matmuls read their group ends back to the host, then one product per expert.
    model = build(MOE["qwen3_moe"], torch.float32).to("cuda")
    ids = torch.randint(0, 256, (1, 9), device="cuda")
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
        compiled = torch.compile(model, backend=luminal.luminal_backend)
        _close(compiled(input_ids=ids, use_cache=False).logits, expected)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_integer_histc_counts_as_eager(dtype):
    # CUDA's histc takes integers (transformers counts tokens per expert in int32 there); the
    # first GPU run found luminal refusing them. Fixed, fractional and data-derived ranges.
    values = torch.tensor([[0, 3, 1, 3, 1], [0, 2, 2, 7, 9]], dtype=dtype, device="cuda").t()
    for bins, low, high in ((4, 0, 3), (3, 1.5, 6.9), (5, 0, 0)):
        def f(x):
            return torch.histc(x, bins=bins, min=low, max=high)

        torch._dynamo.reset()
        compiled = torch.compile(f, backend=luminal.luminal_backend)
        torch.testing.assert_close(compiled(values), f(values), rtol=0, atol=0)


@needs_gpu
def test_a_cpu_input_the_graph_moves_to_the_gpu_is_copied_by_each_call():
    # As a StaticCache's cumulative_length when compiled before any eager step: the move is
    # lifted out of the graph (input_device_moves.py), each call copies the argument.
    def f(x, n):
        return x * n.to(x.device), n.to(x.device) + 1

    x = torch.randn(4, device="cuda")
    compiled = torch.compile(f, backend=luminal.luminal_backend)
    for k in (2.0, 3.0):
        n = torch.tensor(k)
        for got, want in zip(compiled(x, n), f(x, n)):
            assert got.device == want.device
            _close(got, want)


@needs_gpu
def test_an_index_out_of_range_is_an_exception_naming_the_op():
    def f(table, index):
        return torch.gather(table, 0, index)

    table = torch.randn(4, 3, device="cuda")
    compiled = torch.compile(f, backend=luminal.luminal_backend)
    good = torch.tensor([[0, 1, 2]], device="cuda")
    _close(compiled(table, good), f(table, good))
    with pytest.raises(luminal.UserError, match="out of bounds"):
        compiled(table, torch.tensor([[0, 9, 2]], device="cuda"))


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llama_static_cache_decode_gives_eagers_tokens(dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=256,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to("cuda", dtype).eval()
    prompt = torch.randint(0, 256, (1, 9), device="cuda", generator=None)

    def greedy(forward):
        return static_cache_greedy_tokens(
            forward, config, prompt, steps=16, max_cache_len=64, max_batch_size=1, device="cuda", dtype=dtype
        )

    with torch.no_grad():
        expected = greedy(model)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=luminal.luminal_backend)
        assert greedy(compiled) == expected


def _sdpa_reference(q, k, v, mask=None, causal=False):
    """Eager SDPA in f32 on upcast inputs, cast back: luminal computes half attention in f32."""
    upcast = None if mask is None or mask.dtype == torch.bool else mask.float()
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=mask if upcast is None else upcast, is_causal=causal,
        enable_gqa=True,
    )
    return out.to(q.dtype)


# (query rows, keys, head dim, value dim, query heads, key/value heads, mask): prompts that take
# the shared-memory tiles (several tiles of 36 rows, a head dim padded to 4, fewer rows than
# warps), decode steps whose keys split over the block's warps, and a head dim too wide for the
# tiles (one warp per row).
ATTENTION_CASES = {
    "prompt-causal-gqa": (100, 100, 64, 64, 4, 2, "causal"),
    "prompt-float-mask-head-dim-20": (7, 50, 20, 20, 2, 2, "float"),
    "prompt-value-dim-48": (50, 60, 32, 48, 2, 1, "bool"),
    "decode-300-keys": (1, 300, 64, 64, 4, 4, None),
    "decode-bool-mask-head-dim-80": (1, 77, 80, 80, 4, 2, "bool"),
    "prompt-head-dim-256": (40, 40, 256, 256, 2, 2, "causal"),
}


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention_matches_eager(case, dtype):
    rows, keys, head_dim, value_dim, heads, kv_heads, mask_kind = ATTENTION_CASES[case]
    gen = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(1, heads, rows, head_dim, device="cuda", generator=gen).to(dtype)
    k = torch.randn(1, kv_heads, keys, head_dim, device="cuda", generator=gen).to(dtype)
    v = torch.randn(1, kv_heads, keys, value_dim, device="cuda", generator=gen).to(dtype)
    mask = None
    if mask_kind == "float":
        mask = torch.randn(1, 1, rows, keys, device="cuda", generator=gen).to(dtype)
    elif mask_kind == "bool":  # every row keeps its first key
        mask = torch.rand(1, 1, rows, keys, device="cuda", generator=gen) > 0.3
        mask[..., 0] = True
    causal = mask_kind == "causal"

    def attend(q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True
        )

    torch._dynamo.reset()
    compiled = torch.compile(attend, backend=luminal.luminal_backend)
    _close(compiled(q, k, v, mask), _sdpa_reference(q, k, v, mask, causal))


@needs_gpu
def test_attention_over_a_dynamic_prompt_length_matches_eager():
    def attend(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    # The prompt length is a symbol (the first GPU run of this test made every dim dynamic, and
    # a symbolic head dim leaves SDPA's default scale unknown: a UserError, not a kernel bug).
    torch._dynamo.reset()
    compiled = torch.compile(attend, backend=luminal.luminal_backend)
    for rows in (37, 90, 5):
        q, k, v = (torch.randn(1, 2, rows, 64, device="cuda") for _ in range(3))
        for tensor in (q, k, v):
            torch._dynamo.mark_dynamic(tensor, 2)
        _close(compiled(q, k, v), _sdpa_reference(q, k, v, causal=True))


@needs_gpu
@pytest.mark.parametrize("in_place", [False, True], ids=["copy", "in-place"])
def test_a_cache_update_over_many_blocks_matches_eager(in_place):
    # 300 positions x 4 heads x 64: the in-place update spreads over the grid, the copying one
    # runs on one block after its copy.
    def update(cache, positions, new):
        if in_place:
            cache.index_copy_(2, positions, new)
            return cache.sum(-1)
        return cache.index_copy(2, positions, new)

    positions = torch.randperm(512, device="cuda")[:300]
    new = torch.randn(1, 4, 300, 64, device="cuda")
    cache = torch.randn(1, 4, 512, 64, device="cuda")
    expected_cache = cache.clone()
    expected = update(expected_cache, positions, new)
    compiled = torch.compile(update, backend=luminal.luminal_backend)
    _close(compiled(cache, positions, new), expected)
    if in_place:
        torch.testing.assert_close(cache, expected_cache, rtol=0, atol=0)


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("depth", [64, 2048, 100])
@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "offset-by-one"])
def test_a_single_row_linear_matches_eager(dtype, depth, aligned):
    # A GEMV reads 16-byte chunks where both rows are aligned, element by element otherwise (a
    # row sliced one element in, inside the graph) and for the rest of a row whose length is not
    # a multiple of the chunk.
    torch.manual_seed(0)
    linear = torch.nn.Linear(depth, 96, bias=False).to("cuda", dtype)
    start = 0 if aligned else 1

    def f(row):
        return linear((row * 2)[:, start : start + depth])

    row = torch.randn(1, depth + 1, device="cuda", dtype=dtype)
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=luminal.luminal_backend)
    expected = ((row * 2)[:, start : start + depth].float() @ linear.weight.float().t()).to(dtype)
    _close(compiled(row), expected)


@needs_gpu
@pytest.mark.parametrize("config", ["int8", "int8dyn", "int4"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("rows", [1, 5], ids=["decode", "prefill"])
def test_a_torchao_quantized_linear_matches_eager(config, dtype, rows):
    # The decode GEMV reads the int8 weight itself (16-byte chunks widened in registers, dp4a
    # for int8 activations; int4's bytes dequantized per group of 32 in registers); a
    # weight-only prefill widens the weight for cuBLASLt.
    pytest.importorskip("torchao", reason="torchao==0.18.0 (scripts/install_deps.sh)")
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        PerGroup,
        quantize_,
    )

    configs = {
        "int8": Int8WeightOnlyConfig,
        "int8dyn": Int8DynamicActivationInt8WeightConfig,
        "int4": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
    }
    torch.manual_seed(0)
    linear = torch.nn.Linear(2048, 96, bias=True).to("cuda", dtype)
    quantize_(linear, configs[config]())
    x = torch.randn(rows, 2048, device="cuda", dtype=dtype)
    with torch.no_grad():
        expected = linear(x)
        torch._dynamo.reset()
        actual = torch.compile(linear, backend=luminal.luminal_backend)(x)
    # Activations quantized at run time move by a whole step where rounding differs upstream.
    tolerance = 3e-2 if dtype == torch.bfloat16 else 1e-2 if config == "int8dyn" else 2e-4
    torch.testing.assert_close(actual.float(), expected.float(), atol=tolerance, rtol=tolerance)
