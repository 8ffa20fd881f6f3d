"""FLOPs of a forward as `torch.utils.flop_counter` counts its matmuls, plus attention's two
products over the query-key pairs its mask lets through, and int8 products (`_int_mm`, torchao's
dynamic-activation Linears), which torch's counter does not count (it gave int8dyn models a floor
of 0.02 ms).

torch's counter has formulas for the CUDA attention kernels only: on CPU, scaled_dot_product_attention
runs `_scaled_dot_product_flash_attention_for_cpu` and counts 0 FLOPs. Counting every pair of a
causal or padded mask would charge work no path needs to do (a 1,024-token prefill into a
2,048-slot StaticCache masks three quarters of its pairs), so the pairs are counted from the mask.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils.flop_counter import FlopCounterMode


def attended_pairs(query: torch.Tensor, key: torch.Tensor, is_causal: bool, attn_mask: torch.Tensor | None) -> int:
    """Query-key pairs, over every batch and head, whose probability the mask does not force to 0."""
    *batch, L, _ = query.shape
    S = key.shape[-2]
    if attn_mask is not None:
        allowed = attn_mask if attn_mask.dtype == torch.bool else attn_mask != float("-inf")
    elif is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool).tril()
    else:
        allowed = torch.ones(L, S, dtype=torch.bool)
    return int(allowed.expand(*batch, L, S).sum())


def _cpu_attention_flops(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dropout_p: float = 0.0,
                         is_causal: bool = False, *, attn_mask: torch.Tensor | None = None, scale: float | None = None,
                         out_val: Any = None) -> int:
    """q·kᵀ and p·v over the attended pairs: 2 FLOPs per multiply-add."""
    pairs = attended_pairs(query, key, is_causal, attn_mask)
    return 2 * pairs * query.shape[-1] + 2 * pairs * value.shape[-1]


_cpu_attention_flops._get_raw = True  # FlopCounterMode passes it the tensors, not their shapes


def _int_mm_flops(a_shape: tuple[int, ...], b_shape: tuple[int, ...], *args: Any, out_shape: Any = None,
                  **kwargs: Any) -> int:
    """An [m, k] x [k, n] int8 product: 2 FLOPs per multiply-add, as for a float matmul."""
    m, k = a_shape
    return 2 * m * k * b_shape[1]


def count_flops(forward: Callable[[], Any]) -> int:
    """Total FLOPs of `forward()`, attention counted by attended_pairs, int8 products as matmuls."""
    mapping = {
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention_flops,
        torch.ops.aten._int_mm: _int_mm_flops,
    }
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter, torch.no_grad():
        forward()
    return counter.get_total_flops()
