"""reflection_pad1d/2d/3d and replication_pad1d/2d/3d against eager (luminal keeps them whole and
translates each as one Gather per padded dim), in every dtype torch's CPU kernels take; through
F.pad and through the aten ops directly. Negative pads crop; inputs include unbatched, size-1,
odd and non-contiguous (channels_last, transposed) tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from op_harness import ALL, Case, run_case

aten = torch.ops.aten

V1 = {
    "3d": (lambda m: m((2, 3, 7)),),
    "unbatched": (lambda m: m((3, 5)),),
    "transposed": (lambda m: m((2, 7, 3)).transpose(1, 2),),
}
V2 = {
    "4d": (lambda m: m((2, 3, 5, 6)),),
    "unbatched": (lambda m: m((3, 4, 5)),),
    "size1_channels": (lambda m: m((1, 1, 4, 5)),),
    "channels_last": (lambda m: m((2, 5, 6, 3)).permute(0, 3, 1, 2),),
}
V3 = {
    "5d": (lambda m: m((1, 2, 3, 4, 5)),),
    "unbatched": (lambda m: m((2, 4, 3, 5)),),
    "permuted": (lambda m: m((2, 4, 3, 5, 2)).permute(0, 4, 1, 2, 3),),
}


def pcase(name, fn, variants, **kw):
    return Case(name, fn, dtypes=ALL, variants=variants, short=(list(variants)[-1],), **kw)


CASES = [
    pcase("reflection_pad1d", lambda x: F.pad(x, (2, 3), mode="reflect"), V1),
    pcase("reflection_pad1d_aten_crop", lambda x: aten.reflection_pad1d(x, [-1, 2]), V1),
    pcase("reflection_pad2d", lambda x: F.pad(x, (1, 3, 2, 0), mode="reflect"), V2),
    pcase("reflection_pad2d_aten", lambda x: aten.reflection_pad2d(x, [3, 1, 1, 3]), V2),
    pcase("reflection_pad3d", lambda x: F.pad(x, (1, 2, 0, 1, 2, 1), mode="reflect"), V3),
    pcase("replication_pad1d", lambda x: F.pad(x, (3, 4), mode="replicate"), V1),
    pcase("replication_pad2d", lambda x: F.pad(x, (4, 1, 0, 6), mode="replicate"), V2),
    pcase("replication_pad2d_aten_crop", lambda x: aten.replication_pad2d(x, [2, -1, -1, 2]), V2),
    pcase("replication_pad3d", lambda x: F.pad(x, (1, 0, 3, 1, 2, 2), mode="replicate"), V3),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_padding(case):
    run_case(case)
