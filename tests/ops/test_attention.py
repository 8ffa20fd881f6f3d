"""scaled_dot_product_attention (kept whole by luminal's decomposition table) against eager:
masks (bool, float, causal), GQA, custom scale, fully masked rows, f32/f64/f16/bf16; and the
CPU runtime's attention pattern kernel: query blocks, strided operands, skipped key columns."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import luminal
from op_harness import FLOATS, TOLERANCE, Case, run_case
from test_linalg import cpu_multiplies_bf16_pairs


def qkv(q_heads=4, kv_heads=4, L=5, S=5):
    def make(_d):
        g = torch.Generator().manual_seed(L * 10 + S)
        return tuple(torch.randn(2, h, n, 8, generator=g).to(_d) for h, n in ((q_heads, L), (kv_heads, S), (kv_heads, S)))
    return make


def strided_qkv(L, S, heads=3, E=24, head_dim_last=True):
    """q, k, v as HF's attention reads them: [B, H, n, E] views of [B, n, H, E] projections; or,
    with head_dim_last=False, views whose head dim is not the contiguous one."""
    def make(_d):
        g = torch.Generator().manual_seed(L * 100 + S)
        if head_dim_last:
            return tuple(torch.randn(2, n, heads, E, generator=g).to(_d).transpose(1, 2) for n in (L, S, S))
        return tuple(torch.randn(2, heads, E, n, generator=g).to(_d).transpose(-1, -2) for n in (L, S, S))
    return make


def repeat_kv(x, n_rep):
    """transformers' repeat_kv: each of x's heads n_rep times, through expand then reshape (a clone)."""
    b, h, s, e = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, e).reshape(b, h * n_rep, s, e)


def attend_repeated(q, k, v, mask=None):
    """Attention as transformers' sdpa path calls it without enable_gqa: K and V repeated first."""
    group = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, repeat_kv(k, group), repeat_kv(v, group), attn_mask=mask)


def key_heads_only(q_heads, kv_heads):
    """q and v with q_heads heads, k with kv_heads."""
    def make(d):
        q, k, _ = qkv(q_heads, kv_heads)(d)
        return q, k, qkv(q_heads, q_heads)(d)[2]
    return make


def attend_repeated_key_only(q, k, v):
    """Only K repeated; V has every query head: nothing to regroup."""
    return F.scaled_dot_product_attention(q, repeat_kv(k, q.shape[1] // k.shape[1]), v)


# Query row l attends keys [l, l + 8) of 45: a band, so each block of query rows reads a window of
# keys; rows 5 and 33 attend nothing (zeros).
BAND_MASK = (torch.arange(45)[None, :] >= torch.arange(40)[:, None]) & (torch.arange(45)[None, :] < torch.arange(40)[:, None] + 8)
BAND_MASK[5] = False
BAND_MASK[33] = False

# Each of 40 query rows attends 0-5 scattered keys of 70 (rows 0, 13 and 39 none, row 38 only the
# last key, row 20 also the first): the attended-columns scan widens its window from rows before
# the last, and skips -inf runs sixteen columns at a time on both sides of the window.
SPARSE_MASK = torch.rand(40, 70, generator=torch.Generator().manual_seed(3)) > 0.97
SPARSE_MASK[[0, 13, 39]] = False
SPARSE_MASK[38] = False
SPARSE_MASK[38, 69] = True
SPARSE_MASK[20, 0] = True

BOOL_MASK = torch.tensor([[True, False, True, True, False]] * 5)
BOOL_MASK[2] = False  # a fully masked row gives zeros, as torch's _safe_softmax does

# bf16 prompts' attention runs on bf16 tiles where the CPU has them (AMX, or vdpbf16ps:
# lm_attention_head_bf16_tiles): query rows in blocks of 32 and more, keys in chunks of 32, head
# dims padded to 32 and value columns to 16. These shapes cross each of those boundaries: 70 rows (three blocks' worth of tiles, the last
# partial), 100 and 45 keys, head dims 64, 40 and 128, value dims 48 and 24 (an odd count of
# column tiles), causal and band masks that skip key chunks, and strided operands.
LONG_BAND_MASK = ((torch.arange(100)[None, :] >= torch.arange(70)[:, None])
                  & (torch.arange(100)[None, :] < torch.arange(70)[:, None] + 40))
LONG_BAND_MASK[9] = False


def long_qkv(L, S, E, Ev, heads=2, strided=False):
    sizes = ((L, E), (S, E), (S, Ev))

    def make(_d):
        g = torch.Generator().manual_seed(L * 1000 + S + E)
        if strided:  # [B, H, n, E] views of [B, n, H, E] projections
            return tuple(torch.randn(1, n, heads, e, generator=g).to(_d).transpose(1, 2) for n, e in sizes)
        return tuple(torch.randn(1, heads, n, e, generator=g).to(_d) for n, e in sizes)
    return make


CASES = [
    Case("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), dtypes=FLOATS, arity=3, variants={},
         extra_inputs=[qkv()]),
    Case("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), dtypes=FLOATS, arity=3,
         variants={}, extra_inputs=[qkv(), qkv(L=3, S=5)]),
    Case("sdpa_bool_mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=BOOL_MASK), dtypes=FLOATS, arity=3,
         variants={}, extra_inputs=[qkv()]),
    Case("sdpa_float_mask_scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=BOOL_MASK.float() - 1, scale=0.3),
         dtypes=FLOATS, arity=3, variants={}, extra_inputs=[qkv()]),
    Case("sdpa_gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), dtypes=FLOATS,
         arity=3, variants={}, extra_inputs=[qkv(q_heads=4, kv_heads=2)]),
    Case("sdpa_repeat_kv", attend_repeated, dtypes=FLOATS, arity=3, variants={},
         extra_inputs=[qkv(q_heads=6, kv_heads=2), qkv(q_heads=4, kv_heads=1, L=1, S=7),
                       qkv(q_heads=4, kv_heads=4)]),
    Case("sdpa_repeat_kv_mask", lambda q, k, v: attend_repeated(q, k, v, BOOL_MASK), dtypes=FLOATS, arity=3,
         variants={}, extra_inputs=[qkv(q_heads=4, kv_heads=2)]),
    Case("sdpa_repeat_key_only", attend_repeated_key_only, dtypes=FLOATS, arity=3, variants={},
         extra_inputs=[qkv(q_heads=4, kv_heads=4), key_heads_only(q_heads=4, kv_heads=2)]),
    # 41 query rows: a block of 36 and one of 5; 2 rows: the decode path; odd head dims.
    Case("sdpa_strided_blocks", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), dtypes=FLOATS, arity=3,
         variants={}, extra_inputs=[strided_qkv(41, 43), strided_qkv(2, 41), strided_qkv(41, 43, E=20, head_dim_last=False),
                                    strided_qkv(3, 9, E=20, head_dim_last=False)]),
    Case("sdpa_sparse_mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=SPARSE_MASK),
         dtypes=FLOATS, arity=3, variants={}, extra_inputs=[strided_qkv(40, 70)]),
    Case("sdpa_band_mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=BAND_MASK), dtypes=FLOATS,
         arity=3, variants={}, extra_inputs=[strided_qkv(40, 45)]),
    Case("sdpa_long_heads", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), dtypes=FLOATS, arity=3, variants={},
         extra_inputs=[long_qkv(70, 100, 64, 64), long_qkv(70, 45, 40, 48, strided=True), long_qkv(4, 33, 128, 24)]),
    Case("sdpa_long_heads_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), dtypes=FLOATS,
         arity=3, variants={}, extra_inputs=[long_qkv(70, 100, 128, 128), long_qkv(100, 100, 64, 64, strided=True)]),
    Case("sdpa_long_heads_band", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=LONG_BAND_MASK),
         dtypes=FLOATS, arity=3, variants={}, extra_inputs=[long_qkv(70, 100, 64, 48)]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention(case):
    run_case(case)


def kernel_steps(debug_dir):
    """The steps the CPU runtime ran, one line each, from the compile's cpu_stats.txt."""
    lines = (debug_dir / "cpu_stats.txt").read_text().splitlines()
    return [line for line in lines if line.startswith(("kernel", "gemm", "aten"))]


def test_attention_is_one_kernel_without_a_scores_buffer(tmp_path):
    """The CPU runtime computes masked attention as one pattern kernel: no BLAS product and no
    softmax row kernel, so no [L, S] scores buffer exists between steps."""
    q, k, v = strided_qkv(40, 45)(torch.float32)
    attend = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=BAND_MASK)  # noqa: E731
    compiled = torch.compile(attend, backend="luminal", options={"debug_dir": str(tmp_path), "fallback": "error"})
    torch.testing.assert_close(compiled(q, k, v), attend(q, k, v))
    steps = kernel_steps(tmp_path)
    assert sum("scaled dot-product attention" in line for line in steps) == 1, steps
    assert not any(line.startswith("gemm") or "row kernel" in line for line in steps), steps


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_causal_attention_computes_no_mask(tmp_path, dtype):
    """is_causal's mask, and transformers' StaticCache mask (the cache's slots compared with the
    cache positions, which start at a run-time value), are never tensors: the attention kernel
    masks each query row past its diagonal itself and is the only kernel (but for a bf16
    output's cast)."""
    q, k, v = strided_qkv(100, 100, heads=2, E=32)(dtype)

    def cache_mask(q, k, v, start):
        positions = torch.arange(q.shape[2]) + start
        allowed = torch.arange(k.shape[2])[None, :] + 0 <= positions[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)

    def is_causal(q, k, v, start):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    for attend in (is_causal, cache_mask):
        debug_dir = tmp_path / attend.__name__
        options = {"debug_dir": str(debug_dir), "fallback": "error"}
        compiled = torch.compile(attend, backend="luminal", options=options, dynamic=False)
        for start in (0, 7, -20):
            start = torch.tensor(start)
            torch.testing.assert_close(compiled(q, k, v, start), attend(q, k, v, start), atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])
        steps = kernel_steps(debug_dir)
        attention = [line for line in steps if "scaled dot-product attention (" in line]
        others = [line for line in steps if line not in attention]
        assert len(attention) == 1, steps
        assert all("pointwise kernel: Cast from" in line for line in others) and len(others) <= 1, steps


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_causal_rows_do_not_read_keys_past_their_diagonal(dtype):
    """A NaN key makes the rows that attend it NaN, not the rows before it that share its block of
    query rows: eager's causal attention never reads a row's scores past its diagonal either."""
    q, k, v = strided_qkv(100, 100, heads=2, E=32)(dtype)
    k = k.clone()
    k[:, :, 70, 3] = float("nan")
    attend = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    compiled = torch.compile(attend, backend="luminal", options={"fallback": "error"})
    expected, actual = attend(q, k, v), compiled(q, k, v)
    assert torch.equal(actual.isnan().any(-1), expected.isnan().any(-1))
    finite = ~expected.isnan().any(-1)
    torch.testing.assert_close(actual[finite], expected[finite], atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])


def test_repeated_kv_is_read_in_place(tmp_path):
    """transformers' repeat_kv before attention copies every KV head G times, the whole static
    cache on every decode step; luminal reads the unrepeated K/V with grouped queries instead, so
    the one kernel is the attention and nothing is copied. The K/V here are a cache-like slice."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 8, 1, 16, generator=g)
    cache_k, cache_v = (torch.randn(1, 2, 32, 16, generator=g) for _ in range(2))
    attend = lambda q, k, v: attend_repeated(q, k[:, :, :20], v[:, :, :20])  # noqa: E731
    options = {"debug_dir": str(tmp_path), "fallback": "error"}
    compiled = torch.compile(attend, backend="luminal", options=options)
    torch.testing.assert_close(compiled(q, cache_k, cache_v), attend(q, cache_k, cache_v))
    steps = kernel_steps(tmp_path)
    assert len(steps) == 1 and "scaled dot-product attention" in steps[0], steps


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("L", [1, 6], ids=lambda n: f"L{n}")
@pytest.mark.parametrize("filled", [32, 24], ids=lambda n: f"filled{n}")
def test_half_attention_reads_its_operands_in_place(tmp_path, dtype, L, filled):
    """f16/bf16 attention computes in f32. The kernel widens q, k and v as it reads them instead
    of running a cast kernel over each first (the whole static cache on every decode step): the
    only kernel beyond the f32 graph's is the output's cast. K and V may be the cache's first
    `filled` slots (a StaticCache's prefill reads that slice), read in place too. Widening is
    exact, so the result has the bits of the f32 graph fed the widened tensors; a bf16 prompt's
    attention on bf16 tiles (AMX, or vdpbf16ps) rounds its probabilities to bf16
    (test_bf16_prompt_attention_rounds_probabilities_as_eager_does), and is checked against that
    computation instead."""
    tiles_form = dtype == torch.bfloat16 and L >= 4 and cpu_multiplies_bf16_pairs()
    g = torch.Generator().manual_seed(L)
    q = torch.randn(1, 8, L, 16, generator=g).to(dtype)
    cache_k, cache_v = (torch.randn(1, 2, 32, 16, generator=g).to(dtype) for _ in range(2))
    mask = torch.arange(filled)[None, :] <= torch.arange(L)[:, None] + 9  # a static cache's filled slots
    attend = lambda q, k, v: attend_repeated(q, k[:, :, :filled], v[:, :, :filled], mask)  # noqa: E731
    results, steps = [], []
    for inputs, debug_dir in (((q, cache_k, cache_v), tmp_path / "half"),
                              ((q.float(), cache_k.float(), cache_v.float()), tmp_path / "f32")):
        torch._dynamo.reset()
        options = {"debug_dir": str(debug_dir), "fallback": "error"}
        results.append(torch.compile(attend, backend="luminal", options=options)(*inputs))
        steps.append(kernel_steps(debug_dir))
    assert sum("scaled dot-product attention" in line for line in steps[0]) == 1, steps[0]
    assert len(steps[0]) == len(steps[1]) + 1, steps
    if tiles_form:
        group = q.shape[1] // cache_k.shape[1]
        expected = bf16_tiles_attention_reference(q, repeat_kv(cache_k[:, :, :filled], group),
                                                  repeat_kv(cache_v[:, :, :filled], group), mask)
        torch.testing.assert_close(results[0].float(), expected, rtol=8e-3, atol=8e-3)
    else:
        assert torch.equal(results[0], results[1].to(dtype))
    tolerance = TOLERANCE[dtype]  # eager's own half attention rounds on the way
    torch.testing.assert_close(results[0], attend(q, cache_k, cache_v), rtol=tolerance, atol=tolerance)


def bf16_tiles_attention_reference(q, k, v, mask):
    """Attention as the bf16 tiles compute it (and eager's flash attention on such CPUs): f32
    scores of the bf16 operands, the softmax's probabilities rounded to bf16 before P V, each row
    divided by the f32 sum of its probabilities."""
    q, k, v = q.float(), k.float(), v.float()
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5 + torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    probs = torch.exp(scores - scores.amax(-1, keepdim=True))
    return (probs.bfloat16().float() @ v) / probs.sum(-1, keepdim=True)


@pytest.mark.skipif(not cpu_multiplies_bf16_pairs(),
                    reason="needs a CPU with AVX512-BF16 or AMX-BF16 (the bf16 attention's tiles)")
def test_bf16_prompt_attention_rounds_probabilities_as_eager_does(tmp_path):
    """Where the CPU multiplies bf16 pairs (vdpbf16ps, or AMX tiles) a bf16 prompt's attention is
    one kernel that reads q, k and v in place, as the f32 path does, and rounds its probabilities
    to bf16 for P V: within a bf16 rounding of that computation in f32, and within bf16's
    tolerance of eager."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(1, 4, 70, 64, generator=g).bfloat16()
    k, v = (torch.randn(1, 4, 100, 64, generator=g).bfloat16() for _ in range(2))
    mask = torch.arange(100)[None, :] <= torch.arange(70)[:, None] + 20
    mask[3] = False  # a row that attends nothing: zeros
    attend = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # noqa: E731
    options = {"debug_dir": str(tmp_path), "fallback": "error"}
    result = torch.compile(attend, backend="luminal", options=options)(q, k, v)
    steps = kernel_steps(tmp_path)
    # One attention kernel, and one cast: the output's (the mask's bias is a kernel of its own).
    assert sum("scaled dot-product attention" in line and ("on AMX tiles" in line or "on bf16 pairs" in line)
               for line in steps) == 1, steps
    assert sum("Cast" in line for line in steps) == 1, steps
    expected = bf16_tiles_attention_reference(q, k, v, mask)
    expected[:, :, 3] = 0
    torch.testing.assert_close(result.float(), expected, rtol=8e-3, atol=8e-3)
    torch.testing.assert_close(result, attend(q, k, v), rtol=TOLERANCE[torch.bfloat16], atol=TOLERANCE[torch.bfloat16])
