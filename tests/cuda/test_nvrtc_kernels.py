"""Every kernel the CUDA code generator emits for the model families compiles with NVRTC, for
sm_80 and sm_90, without an error or a warning; and the generated source of representative
kernels has the shape the design asks for (docs/cuda.md). No GPU needed: NVRTC only."""

from __future__ import annotations

import re

import pytest
import torch
from nvrtc_check import ARCHS, DECODERS, MAX_CACHE_LEN, MOE, bert, build, check_model, failures, needs_nvrtc

from luminal import _C

pytestmark = needs_nvrtc

# Whole families are the slow sweep's; the fast suite covers every kernel shape through Llama in
# each dtype, Gemma-3 and an MoE in f32, and the small modules below.
FAST_CASES = [("llama", torch.float32), ("llama", torch.bfloat16), ("llama", torch.float16)]
FAST_CASES += [("gemma3", torch.float32), ("qwen3_moe", torch.float32), ("bert", torch.float32)]
FAMILIES = {**DECODERS, **MOE, "bert": bert}
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
ALL_CASES = [(f, d) for f in sorted(FAMILIES) for d in DTYPES]
SLOW_CASES = [c for c in ALL_CASES if c not in FAST_CASES]


def _family_report(family: str, dtype: torch.dtype) -> dict:
    model = build(FAMILIES[family], dtype)
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))
    kwargs = {"input_ids": ids} if family == "bert" else {"input_ids": ids, "use_cache": False}
    return check_model(model, kwargs)


ATTENTION = "scaled dot-product attention"


def _check_family(family: str, dtype: torch.dtype) -> None:
    report = _family_report(family, dtype)
    assert report["kernels"], "no kernels were generated"
    problems = failures(report)
    assert not problems, f"{len(problems)} NVRTC failures or warnings:\n" + "\n\n".join(problems[:3])
    for kernel in report["kernels"]:
        assert set(kernel["images"]) == set(ARCHS)
    # Every family's attention is the pattern kernel, once per layer (2 layers).
    attention = _kernels(report, ATTENTION)
    assert attention and sum(k["launches"] for k in attention) == 2, [k["what"] for k in report["kernels"]]
    assert all(k["launch"] == "one block per query tile" for k in attention)


@pytest.mark.parametrize(("family", "dtype"), FAST_CASES, ids=str)
def test_family_kernels_compile(family, dtype):
    _check_family(family, dtype)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "dtype"), SLOW_CASES, ids=str)
def test_family_kernels_compile_all(family, dtype):
    _check_family(family, dtype)


def _decode_report(family: str, dtype: torch.dtype) -> dict:
    """One StaticCache decode step: Linear layers at M = 1 are GEMVs, the cache update a scatter."""
    from transformers import StaticCache

    model = build(FAMILIES[family], dtype)
    prompt = torch.randint(0, 256, (1, 5), generator=torch.Generator().manual_seed(1))
    cache = StaticCache(config=model.config, max_cache_len=MAX_CACHE_LEN)
    with torch.no_grad():
        model(input_ids=prompt, past_key_values=cache, use_cache=True)
    token = torch.tensor([[7]])
    kwargs = {
        "input_ids": token,
        "past_key_values": cache,
        "use_cache": True,
        "position_ids": torch.tensor([[5]]),
    }
    return check_model(model, kwargs)


DECODE_FAST = [("llama", torch.float32), ("llama", torch.bfloat16)]
DECODE_SLOW = [(f, d) for f in sorted(DECODERS) for d in DTYPES if (f, d) not in DECODE_FAST]


def _check_decode(family: str, dtype: torch.dtype) -> None:
    report = _decode_report(family, dtype)
    problems = failures(report)
    assert not problems, f"{len(problems)} NVRTC failures or warnings:\n" + "\n\n".join(problems[:3])
    launches = {k["launch"] for k in report["kernels"]}
    assert "one warp per output" in launches, "decode Linear layers should be GEMV kernels"
    # One query row against the static cache: its key tiles split over a block of 8 warps, a
    # key window that stops at the cache's filled length (the mask's -inf tail is never read):
    # a causal mask's from the cache position the kernel reads (AttentionSpec::causal), another
    # mask's (Gemma-3's sliding layers) from a block reduction over the bias. Gemma-3's sliding
    # layers have a shorter cache than its full ones: two kernels.
    attention = _kernels(report, ATTENTION)
    assert attention and sum(k["launches"] for k in attention) == 2
    for kernel in attention:
        assert kernel["launch"] == "one block per query tile"
        assert "__launch_bounds__(256)" in kernel["source"]
        assert ("lm_hi = lm_imax((int64_t)0, lm_imin(lm_S, lm_r1 + lm_shift))" in kernel["source"]
                or "lm_block_reduce(lm_first, lm_min_op())" in kernel["source"])
        assert "lm_j0 = lm_lo + 32 * lm_warp; lm_j0 < lm_hi; lm_j0 += blockDim.x)" in kernel["source"]
    if family == "llama":  # transformers' StaticCache mask: causal, from the cache position
        assert all("lm_r1 + lm_shift" in kernel["source"] for kernel in attention)


@pytest.mark.parametrize(("family", "dtype"), DECODE_FAST, ids=str)
def test_decode_step_kernels_compile(family, dtype):
    _check_decode(family, dtype)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "dtype"), DECODE_SLOW, ids=str)
def test_decode_step_kernels_compile_all(family, dtype):
    _check_decode(family, dtype)


def _kernels(report: dict, pattern: str) -> list[dict]:
    return [k for k in report["kernels"] if re.search(pattern, k["what"])]


class Chain(torch.nn.Module):
    def forward(self, x, y):
        return torch.sigmoid(x * y + 1.0).exp()


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Gemv(torch.nn.Module):
    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 32, bias=False, dtype=dtype)

    def forward(self, x):
        return self.linear(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_pointwise_chain_source(dtype):
    x = torch.randn(4, 33, dtype=dtype)
    report = check_model(Chain(), {"x": x, "y": torch.randn(4, 33, dtype=dtype)})
    assert not failures(report)
    [kernel] = _kernels(report, "pointwise kernel")
    source = kernel["source"]
    assert kernel["launch"] == "one thread per element"
    # One thread per element over a grid-stride loop, the element decomposed into indices.
    assert "lm_e < lm_n; lm_e += (int64_t)gridDim.x * blockDim.x" in source
    assert "__launch_bounds__(256)" in source
    assert "expf(" in source and "__builtin" not in source
    if dtype == torch.bfloat16:
        # bf16 storage through cuda_bf16.h, computed in float and rounded after every op.
        assert "#include <cuda_bf16.h>" in source
        assert "const __nv_bfloat16* __restrict__ p" in source
        assert "lm_bf2f(p" in source and "= lm_f2bf(" in source
        assert source.count("lm_rbf(") >= 4, "each op of the chain rounds to bf16 once"
    else:
        assert "cuda_bf16.h" not in source, "f32 kernels need no CUDA headers"


def test_softmax_row_source():
    report = check_model(Softmax(), {"x": torch.randn(6, 50)})
    assert not failures(report)
    [kernel] = _kernels(report, "row kernel")
    source = kernel["source"]
    assert kernel["launch"] == "one block per row"
    # One block per row, threads striding the reduce axis, block reductions for max then sum.
    assert "for (int64_t lm_p = blockIdx.x; lm_p < lm_rows; lm_p += gridDim.x)" in source
    assert "= threadIdx.x; i1 < lm_k; i1 += blockDim.x)" in source
    assert "lm_block_reduce(acc0, lm_max_op())" in source
    assert "lm_block_reduce(nan0, lm_or_op())" in source, "a NaN anywhere in the row propagates"
    assert "lm_block_reduce(acc1, lm_sum_op())" in source
    assert "__shfl_xor_sync" in source and "__shared__" in source
    assert "if (lm_k == 0)" in source, "max over an empty row reports an error"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_gemv_source(dtype):
    model = Gemv(dtype).eval()
    report = check_model(model, {"x": torch.randn(1, 64, dtype=dtype)})
    assert not failures(report)
    [kernel] = _kernels(report, "gemv")
    source = kernel["source"]
    assert kernel["launch"] == "one warp per output"
    assert "const int lm_lane = threadIdx.x & 31;" in source
    # Lanes read 16-byte chunks of both rows where both are aligned, then the rest one by one.
    assert "if ((((unsigned long long)lm_a | (unsigned long long)lm_w) & 15) == 0) {" in source
    assert "lm_c = lm_lane; lm_c < lm_chunks; lm_c += 32" in source
    assert "lm_k = lm_tail + lm_lane; lm_k < lm_depth; lm_k += 32" in source
    assert "lm_warp_reduce(lm_sum, lm_sum_op())" in source
    assert "const uint4 lm_wv = reinterpret_cast<const uint4*>(lm_w)[lm_c];" in source
    if dtype == torch.float16:
        assert "#include <cuda_fp16.h>" in source and "lm_f2h(lm_sum)" in source
        assert "const int64_t lm_chunks = lm_depth / 8;" in source and "__half22float2(lm_ap[lm_q])" in source
    else:
        assert "const int64_t lm_chunks = lm_depth / 4;" in source
        assert "const float4 lm_wf = *reinterpret_cast<const float4*>(&lm_wv);" in source


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_int4_decode_gemv_dequantizes_in_registers(dtype):
    # torchao's int4 (one value a byte, a scale and zero point per group of 32) at decode: one
    # GEMV reading the int8 bytes, where a kernel of its own had written a dequantized copy of
    # the whole weight on every call.
    pytest.importorskip("torchao", reason="torchao==0.18.0 (scripts/install_deps.sh)")
    from torchao.quantization import IntxWeightOnlyConfig, PerGroup, quantize_

    torch.manual_seed(0)
    linear = torch.nn.Linear(256, 48, bias=False).to(dtype)
    quantize_(linear, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)))
    report = check_model(linear, {"input": torch.randn(1, 256, dtype=dtype)})
    assert not failures(report)
    [kernel] = report["kernels"]
    assert kernel["what"].startswith("gemv (M = 1 matmul, weight dequantized per group of 32)"), kernel["what"]
    source = kernel["source"]
    assert "const uint4 lm_wv = reinterpret_cast<const uint4*>(lm_w)[lm_c];" in source
    assert "const int64_t lm_g = (lm_c * 16) / INT64_C(32);" in source
    assert (" - lm_gz, lm_gs)" in source) and (("lm_rbf(__fmul_rn(" in source) == (dtype == torch.bfloat16))


class Sdpa(torch.nn.Module):
    def __init__(self, causal: bool = False) -> None:
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=self.causal, enable_gqa=True
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_attention_source(dtype):
    """SDPA with a float mask is one attention pattern kernel (docs/cuda.md): no [L, S] scores
    in memory, no softmax row kernel and no GEMMs; in f16/bf16 the translator computes it in f32
    between casts, as the C++ kernel does."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 4, n, 16, generator=gen, dtype=dtype) for n in (10, 13, 13))
    mask = torch.randn(2, 1, 10, 13, generator=gen, dtype=dtype)
    report = check_model(Sdpa(), {"q": q, "k": k, "v": v, "mask": mask})
    assert not failures(report), "\n\n".join(failures(report)[:3])
    assert not report["library_steps"], "q·k and p·v are inside the kernel, not cuBLASLt GEMMs"
    assert not _kernels(report, "row kernel"), "the softmax is inside the kernel"
    [kernel] = _kernels(report, ATTENTION)
    source = kernel["source"]
    assert kernel["launch"] == "one block per query tile"
    assert "__launch_bounds__(256)" in source, "10 query rows: a block of 8 warps, two rows each at most"
    # The block's key window is a reduction over the mask; the block stages its query rows and
    # each tile of 32 keys in shared memory, each warp computes its rows against the tile.
    assert "const int64_t lm_lo = lm_block_reduce(lm_first, lm_min_op());" in source
    assert "constexpr int LM_W = 8, LM_RW = 2, LM_EP = 16, LM_QS = 20, LM_EV = 16, LM_CPL = 1;" in source
    assert source.count("for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {") == 2, "max, then exps"
    assert "lm_nan[lm_s] = lm_warp_reduce(lm_nan[lm_s], lm_or_op());" in source, "a NaN score makes its row NaN"
    assert "lm_dot[lm_s] = fmaf(lm_qq.x, lm_kk.x, lm_dot[lm_s]);" in source
    assert "__fadd_rn(__fmul_rn(lm_dot[lm_s], lm_scale)" in source
    assert "const float lm_scale = (float)0.25;" in source, "1 / sqrt(16)"
    assert "cuda_bf16.h" not in source, "the kernel's buffers are f32"


def test_attention_with_rows_too_wide_for_shared_memory_reads_per_row():
    """Head dims whose query rows and key tile do not fit 48 KiB of shared memory: one warp per
    query row reads its keys and values itself (the same sums in the same order)."""
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, n, 256, generator=gen) for n in (40, 40, 40))
    report = check_model(Sdpa(causal=True), {"q": q, "k": k, "v": v})
    assert not failures(report), "\n\n".join(failures(report)[:3])
    [kernel] = _kernels(report, ATTENTION)
    source = kernel["source"]
    assert "__shared__ __align__(16) float lm_qs" not in source
    assert "lm_j = lm_lo + lm_lane; lm_j < lm_hi; lm_j += 32)" in source
    assert "lm_warp_reduce(lm_nan, lm_or_op())" in source
    assert "__shfl_sync(0xffffffffu, lm_e, lm_i)" in source


def test_causal_gqa_attention_source():
    """is_causal with fewer key/value heads (GQA): one pattern kernel reading each key/value head
    for its query heads, computing the causal mask from the indices (no mask kernel, no bias)."""
    gen = torch.Generator().manual_seed(4)
    q = torch.randn(2, 4, 10, 16, generator=gen)
    k, v = (torch.randn(2, 2, 10, 16, generator=gen) for _ in range(2))
    report = check_model(Sdpa(causal=True), {"q": q, "k": k, "v": v})
    assert not failures(report), "\n\n".join(failures(report)[:3])
    assert not report["library_steps"]
    [kernel] = _kernels(report, ATTENTION)
    assert [k["what"] for k in report["kernels"]] == [kernel["what"]], "the attention is the only kernel"
    assert kernel["launch"] == "one block per query tile"
    assert "lm_hi = lm_imax((int64_t)0, lm_imin(lm_S, lm_r1 + lm_shift))" in kernel["source"]
    assert "lm_j <= lm_l + lm_shift ?" in kernel["source"]


def test_attention_dynamic_dims_are_kernel_arguments():
    q, k, v = (torch.randn(1, 2, n, 8) for n in (6, 9, 9))
    mask = torch.zeros(1, 1, 6, 9)
    for tensor in (k, v, mask):
        torch._dynamo.mark_dynamic(tensor, tensor.dim() - 2 if tensor is not mask else 3)
    report = check_model(Sdpa(), {"q": q, "k": k, "v": v, "mask": mask}, dynamic=True)
    assert not failures(report), "\n\n".join(failures(report)[:3])
    [kernel] = _kernels(report, ATTENTION)
    assert kernel["symbols"], "the key length is symbolic"
    assert re.search(r"const int64_t lm_S = S_\w+;", kernel["source"]), "the key length comes from a symbol"


class Misc(torch.nn.Module):
    """Kernel shapes the model families use rarely: an accumulating scatter, integer division,
    a gather, bool / int / f64 / f16 reductions, rounding and NaN handling."""

    def forward(self, x, idx, ints):
        scattered = torch.zeros(4, 8).scatter_add(0, idx, x)
        integer = ints // 3 + ints % 5
        gathered = x.gather(1, idx)
        any_positive = (x > 0).any(dim=1)
        int_max = ints.max(dim=1).values
        rounded = x.round() + x.abs().sqrt() + x.floor() + x.ceil() + x.trunc()
        nan_safe = torch.where(torch.isnan(x), 0.0, x).pow(2) + torch.nan_to_num(x / 0.0)
        double_sum = x.double().exp().sum(1)
        half_prod = x.to(torch.float16).sigmoid().prod(dim=1)
        return scattered, integer, gathered, any_positive, int_max, rounded, nan_safe, double_sum, half_prod


def test_less_common_kernels_compile():
    x = torch.randn(4, 8)
    idx = torch.randint(0, 4, (4, 8), generator=torch.Generator().manual_seed(0))
    ints = torch.randint(-9, 9, (4, 8), generator=torch.Generator().manual_seed(1))
    report = check_model(Misc(), {"x": x, "idx": idx, "ints": ints})
    assert not failures(report), "\n\n".join(failures(report)[:3])
    [scatter] = _kernels(report, "scatter \\(accumulate\\)")
    # In order on one thread after the block copied data: correct, not fast (docs/cuda.md).
    assert "__syncthreads();\n  if (threadIdx.x == 0) {" in scatter["source"]
    [gather] = _kernels(report, "Gather")
    assert "lm_report(lm_info, 1, g" in gather["source"], "an out-of-range index is reported, not read"
    assert any("lm_idiv(" in k["source"] for k in report["kernels"]), "integer division checks for zero"


def test_dynamic_dims_are_kernel_arguments():
    x = torch.randn(3, 40)
    torch._dynamo.mark_dynamic(x, 0)
    report = check_model(Softmax(), {"x": x}, dynamic=True)
    assert not failures(report)
    [kernel] = _kernels(report, "row kernel")
    assert kernel["symbols"], "the batch dim is symbolic"
    for symbol in kernel["symbols"]:
        assert re.search(rf"const int64_t S_{re.escape(symbol)}\b[,)]", kernel["source"])
    assert re.search(r"const int64_t lm_rows = S_\w+;", kernel["source"]), "rows come from the symbol"


def test_identical_kernels_compile_once():
    model = build(DECODERS["llama"], torch.float32)
    before = _C.cuda_nvrtc_stats()
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(0))
    report = check_model(model, {"input_ids": ids, "use_cache": False})
    assert not failures(report)
    # Two layers launch the same kernels: distinct kernels are fewer than launches.
    assert sum(k["launches"] for k in report["kernels"]) > len(report["kernels"])
    again = check_model(model, {"input_ids": ids, "use_cache": False})
    after = _C.cuda_nvrtc_stats()
    assert after["cache_hits"] - before["cache_hits"] >= len(again["kernels"]) * len(ARCHS)


def test_ptx_images():
    """PTX (for the driver to JIT on a GPU newer than any CUBIN) from the same kernels."""
    report = check_model(Softmax(), {"x": torch.randn(2, 8)}, archs=["sm_90"], image="ptx")
    assert not failures(report)
    [kernel] = report["kernels"]
    assert kernel["images"]["sm_90"]["bytes"] > 0


def test_bad_arch_is_a_user_error():
    from luminal.errors import UserError

    with pytest.raises(UserError, match="sm_NN"):
        check_model(Softmax(), {"x": torch.randn(2, 8)}, archs=["ampere"])


def test_missing_nvrtc_is_a_clear_error_only_when_used():
    """luminal imports without NVRTC; asking for it raises UserError naming the fix. Run in a
    process that cannot see pip's nvidia wheels (skipped where the system loader finds NVRTC)."""
    import os
    import subprocess
    import sys

    program = """
import sys
sys.modules["nvidia"] = None  # importlib.util.find_spec("nvidia") is None: no pip wheels
import luminal
from luminal import _C
from luminal.errors import UserError
try:
    _C.cuda_nvrtc_version()
    print("FOUND")
except UserError as error:
    print("ERROR", error)
"""
    hidden = ("LUMINAL_NVRTC_PATH", "LD_LIBRARY_PATH")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    command = [sys.executable, "-c", program]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("FOUND"):
        pytest.skip("the system's loader finds NVRTC without pip's wheels")
    assert "pip install nvidia-cuda-nvrtc" in result.stdout and "LUMINAL_NVRTC_PATH" in result.stdout
