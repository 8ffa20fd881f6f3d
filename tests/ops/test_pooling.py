"""Pooling (max_pool2d/3d with indices, avg_pool2d/3d, adaptive_avg_pool2d/3d) against eager in
every dtype torch's CPU kernels take. Max-pool indices are compared exactly, with ties, -inf
and NaN inside windows (torch: the first max wins, the last NaN of a window wins). Inputs
include channels_last and transposed views, unbatched [C, H, W] inputs, size-1 dims and odd
sizes; ceil_mode, padding, dilation, count_include_pad and divisor_override vary."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from op_harness import FLOATS, INTS, Case, f32, i64, run_case

V2 = {
    "4d": (lambda m: m((2, 3, 9, 10)),),
    "size1": (lambda m: m((1, 1, 1, 5)),),
    "unbatched": (lambda m: m((2, 7, 5)),),
    "channels_last": (lambda m: m((2, 8, 7, 3)).permute(0, 3, 1, 2),),
    "transposed": (lambda m: m((2, 3, 10, 9)).transpose(2, 3),),
}
V2_BIG = {k: v for k, v in V2.items() if k != "size1"}  # kernels of 3 need H >= 2 after padding 1
V3 = {
    "5d": (lambda m: m((1, 2, 5, 6, 7)),),
    "unbatched": (lambda m: m((2, 4, 3, 5)),),
    "permuted": (lambda m: m((2, 5, 6, 7, 2)).permute(0, 4, 1, 2, 3),),
}


def pcase(name, fn, variants=V2, dtypes=FLOATS + INTS, **kw):
    return Case(name, fn, dtypes=dtypes, variants=variants, short=(list(variants)[-1],), **kw)


def ties_and_nans(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """A plane with repeated maxima, -inf and NaNs placed inside (and across) windows."""
    x = torch.tensor([[3, 3, 1, 2, 2, 0], [1, 3, 0, 2, 1, 2], [0, 0, 0, 0, 5, 5], [4, 1, 4, 5, 5, 1], [2, 2, 2, 2, 2, 2]],
                     dtype=torch.float64)
    if dtype.is_floating_point:
        x[0, 4] = float("nan")
        x[1, 5] = float("nan")
        x[2, 0:2] = float("-inf")
        x[3, 0] = float("nan")
    return (x.to(dtype).expand(2, 3, 5, 6).clone(),)


MAX_EXTRA = {"extra_inputs": [ties_and_nans]}

CASES = [
    pcase("max_pool2d", lambda x: F.max_pool2d(x, 2, return_indices=True), **MAX_EXTRA),
    pcase("max_pool2d_stride_padding", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True), V2_BIG,
          **MAX_EXTRA),
    pcase("max_pool2d_overlap", lambda x: F.max_pool2d(x, (3, 2), stride=1, padding=(1, 0), return_indices=True), V2_BIG,
          **MAX_EXTRA),
    pcase("max_pool2d_dilation_ceil", lambda x: F.max_pool2d(x, 2, stride=2, padding=1, dilation=2, ceil_mode=True,
                                                              return_indices=True), V2_BIG, **MAX_EXTRA),
    pcase("max_pool2d_ceil", lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True, return_indices=True), V2_BIG,
          **MAX_EXTRA),
    pcase("max_pool2d_values_only", lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2))),
    pcase("max_pool1d", lambda x: F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True),
          {"3d": (lambda m: m((2, 3, 11)),), "transposed": (lambda m: m((2, 11, 3)).transpose(1, 2),)}),
    pcase("max_pool3d", lambda x: F.max_pool3d(x, 2, stride=(1, 2, 2), padding=(0, 1, 1), return_indices=True), V3),
    pcase("max_pool3d_ceil_dilation", lambda x: F.max_pool3d(x, 2, stride=2, dilation=(1, 2, 1), ceil_mode=True,
                                                              return_indices=True), V3),
    pcase("avg_pool2d", lambda x: F.avg_pool2d(x, 2)),
    pcase("avg_pool2d_padding", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), V2_BIG),
    pcase("avg_pool2d_exclude_pad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), V2_BIG),
    pcase("avg_pool2d_ceil", lambda x: F.avg_pool2d(x, (3, 2), stride=2, padding=1, ceil_mode=True), V2_BIG),
    pcase("avg_pool2d_ceil_exclude_pad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                                count_include_pad=False), V2_BIG),
    pcase("avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, divisor_override=4),
          V2_BIG),
    pcase("avg_pool1d", lambda x: F.avg_pool1d(x, 3, stride=2, padding=1),
          {"3d": (lambda m: m((2, 3, 11)),), "transposed": (lambda m: m((2, 11, 3)).transpose(1, 2),)}),
    pcase("avg_pool3d", lambda x: F.avg_pool3d(x, 2, stride=(1, 2, 2), padding=(0, 1, 1)), V3),
    pcase("avg_pool3d_ceil_exclude_pad", lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                                count_include_pad=False), V3),
    pcase("avg_pool3d_divisor", lambda x: F.avg_pool3d(x, 2, divisor_override=3), V3),
    pcase("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (4, 3)), dtypes=FLOATS),
    pcase("adaptive_avg_pool2d_larger", lambda x: F.adaptive_avg_pool2d(x, (11, 7)), dtypes=FLOATS),
    pcase("adaptive_avg_pool2d_size1_dim", lambda x: F.adaptive_avg_pool2d(x, (1, 2)), dtypes=FLOATS),
    pcase("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), V3, dtypes=FLOATS),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pooling(case):
    run_case(case)


def test_max_pool_all_neg_inf_window_points_at_first_input_element():
    """A window whose in-bounds values are all -inf (and padding around them): torch keeps the
    first in-bounds position, never a padding one."""
    x = torch.full((1, 1, 4, 4), float("-inf"))
    x[0, 0, 3, 3] = 1.0
    run_case(Case("max_pool_neg_inf", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True),
                  dtypes=(f32,), variants={}, extra_inputs=[lambda d: (x.to(d),)]))


def test_int64_avg_pool_truncates_like_eager():
    x = torch.arange(-20, 20, dtype=i64).reshape(1, 2, 4, 5)
    run_case(Case("avg_pool_i64", lambda x: F.avg_pool2d(x, 2, stride=1, padding=1, count_include_pad=False),
                  dtypes=(i64,), variants={}, extra_inputs=[lambda d: (x,)]))
