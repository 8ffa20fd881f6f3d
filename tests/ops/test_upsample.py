"""upsample_nearest2d.vec and upsample_bilinear2d.vec (F.interpolate) against eager in every dtype
torch's CPU kernels take: scale factors (integer and fractional, up and down) or output sizes,
bilinear with align_corners both ways. Inputs include size-1 dims, odd sizes, channels_last
and transposed views."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from op_harness import ALL, FLOATS, Case, run_case

V = {
    "4d": (lambda m: m((2, 3, 5, 6)),),
    "size1": (lambda m: m((1, 1, 1, 4)),),
    "odd": (lambda m: m((1, 2, 7, 3)),),
    "channels_last": (lambda m: m((2, 5, 6, 3)).permute(0, 3, 1, 2),),
    "transposed": (lambda m: m((2, 3, 6, 5)).transpose(2, 3),),
}


def ucase(name, fn, dtypes, **kw):
    return Case(name, fn, dtypes=dtypes, variants=V, short=("channels_last", "transposed"), **kw)


def nearest(**kw):
    return lambda x: F.interpolate(x, mode="nearest", **kw)


def bilinear(**kw):
    return lambda x: F.interpolate(x, mode="bilinear", **kw)


CASES = [
    ucase("nearest_scale2", nearest(scale_factor=2), ALL),
    ucase("nearest_scale_fraction", nearest(scale_factor=(1.7, 2.5)), ALL),
    ucase("nearest_downscale", nearest(scale_factor=0.5), ALL),
    ucase("nearest_size", nearest(size=(7, 11)), ALL),
    ucase("nearest_size_down", nearest(size=(2, 3)), ALL),
    ucase("nearest_recompute_scale", nearest(scale_factor=1.3, recompute_scale_factor=True), ALL),
    ucase("bilinear_scale2", bilinear(scale_factor=2), FLOATS),
    ucase("bilinear_scale_fraction", bilinear(scale_factor=(1.3, 2.7)), FLOATS),
    ucase("bilinear_downscale", bilinear(scale_factor=(0.5, 0.7)), FLOATS),
    ucase("bilinear_size", bilinear(size=(7, 11)), FLOATS),
    ucase("bilinear_align_corners_scale", bilinear(scale_factor=(1.5, 3), align_corners=True), FLOATS),
    ucase("bilinear_align_corners_size", bilinear(size=(9, 4), align_corners=True), FLOATS),
    ucase("bilinear_align_corners_size1", bilinear(size=(1, 5), align_corners=True), FLOATS),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_upsample(case):
    run_case(case)
