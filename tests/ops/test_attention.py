"""scaled_dot_product_attention (kept whole by luminal's decomposition table) against eager:
masks (bool, float, causal), GQA, custom scale, fully masked rows, f32/f64/f16/bf16."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from op_harness import FLOATS, Case, run_case


def qkv(q_heads=4, kv_heads=4, L=5, S=5):
    def make(_d):
        g = torch.Generator().manual_seed(L * 10 + S)
        return tuple(torch.randn(2, h, n, 8, generator=g).to(_d) for h, n in ((q_heads, L), (kv_heads, S), (kv_heads, S)))
    return make


BOOL_MASK = torch.tensor([[True, False, True, True, False]] * 5)
BOOL_MASK[2] = False  # a fully masked row gives zeros, as torch's _safe_softmax does

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
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention(case):
    run_case(case)
