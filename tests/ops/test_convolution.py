"""aten::convolution (conv1d/2d/3d: stride, padding, dilation, groups, bias) against eager in the
float dtypes, through im2col + one Matmul; weights and biases are graph inputs here so that every
dtype compiles in one graph. Inputs include channels_last and transposed views, size-1 dims and
odd sizes. Transposed convolution (a forward one over a zero-spread input) is native too:
with fallback='error' it must not need the ATen fallback."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import CountingBackend
from op_harness import FLOATS, Case, run_case

# Small values keep the half-precision sums within the suite's relative tolerance.
DOMAIN = (-1.0, 1.0)


def ccase(name, fn, variants, **kw):
    return Case(name, fn, dtypes=FLOATS, variants=variants, short=(list(variants)[-1],),
                domains=(DOMAIN, DOMAIN, DOMAIN), **kw)


CONV2D = {
    "basic": (lambda m: m((2, 4, 9, 10)), lambda m: m((6, 4, 3, 3)), lambda m: m((6,))),
    "size1": (lambda m: m((1, 1, 1, 5)), lambda m: m((3, 1, 1, 3)), lambda m: m((3,))),
    "odd": (lambda m: m((3, 3, 7, 5)), lambda m: m((5, 3, 2, 3)), lambda m: m((5,))),
    "channels_last": (lambda m: m((2, 8, 9, 4)).permute(0, 3, 1, 2), lambda m: m((6, 4, 3, 3)), lambda m: m((6,))),
    "transposed": (lambda m: m((2, 4, 10, 9)).transpose(2, 3), lambda m: m((6, 3, 3, 4)).transpose(1, 3),
                   lambda m: m((12,))[::2]),
}
GROUPED = {
    "grouped": (lambda m: m((2, 6, 8, 7)), lambda m: m((9, 2, 3, 2))),
    "channels_last": (lambda m: m((1, 8, 7, 6)).permute(0, 3, 1, 2), lambda m: m((9, 2, 3, 2))),
}
DEPTHWISE = {
    "depthwise": (lambda m: m((2, 4, 6, 6)), lambda m: m((4, 1, 3, 3))),
    "transposed": (lambda m: m((2, 4, 6, 6)).transpose(2, 3), lambda m: m((8, 1, 3, 3))[::2]),
}
# Transposed convolution weights are [C_in, C_out / groups, *k]; the cases transpose [C_out, C_in, *k].
CONV2D_T = {
    "basic": (lambda m: m((2, 4, 5, 6)), lambda m: m((6, 4, 3, 3)), lambda m: m((6,))),
    "size1": (lambda m: m((1, 4, 1, 1)), lambda m: m((6, 4, 3, 3)), lambda m: m((6,))),
    "channels_last": (lambda m: m((2, 5, 6, 4)).permute(0, 3, 1, 2), lambda m: m((6, 4, 3, 2)), lambda m: m((6,))),
}
CONV1D = {
    "basic": (lambda m: m((2, 3, 11)), lambda m: m((5, 3, 3)), lambda m: m((5,))),
    "size1": (lambda m: m((1, 1, 1)), lambda m: m((2, 1, 1)), lambda m: m((2,))),
    "transposed": (lambda m: m((2, 11, 3)).transpose(1, 2), lambda m: m((5, 3, 3)), lambda m: m((5,))),
}
CONV3D = {
    "basic": (lambda m: m((1, 2, 5, 4, 6)), lambda m: m((3, 2, 3, 2, 3))),
    "permuted": (lambda m: m((2, 5, 4, 6, 2)).permute(0, 4, 1, 2, 3), lambda m: m((4, 1, 2, 3, 3))),
}

CASES = [
    ccase("conv2d", lambda x, w, b: F.conv2d(x, w, b), CONV2D),
    ccase("conv2d_stride_padding", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), CONV2D),
    ccase("conv2d_dilation", lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=(2, 1), dilation=(2, 1)),
          {k: v for k, v in CONV2D.items() if k != "size1"}),
    ccase("conv2d_padding_same", lambda x, w, b: F.conv2d(x, w, b, padding="same"), CONV2D),
    ccase("conv2d_groups", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, groups=3), GROUPED),
    ccase("conv2d_depthwise", lambda x, w: F.conv2d(x, w, padding=1, groups=4), DEPTHWISE),
    ccase("conv2d_1x1", lambda x, w, b: F.conv2d(x, w[:, :, :1, :1], b), CONV2D),
    ccase("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2), CONV1D),
    ccase("conv1d_no_bias", lambda x, w, b: F.conv1d(x, w, padding=1), CONV1D),
    ccase("conv3d", lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1), CONV3D),
    ccase("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w.transpose(0, 1), b, stride=2, padding=1,
                                                                   output_padding=1), CONV2D_T),
    ccase("conv_transpose2d_groups_dilation", lambda x, w, b: F.conv_transpose2d(
        x, w.transpose(0, 1), b, stride=(1, 2), padding=(2, 0), groups=2, dilation=(2, 1)),
          {k: (v[0], lambda m: m((3, 4, 3, 3)), v[2]) for k, v in CONV2D_T.items()}),
    ccase("conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w.transpose(0, 1), b, stride=3, padding=1),
          {k: v for k, v in CONV1D.items() if k != "size1"}),
    ccase("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w.transpose(0, 1), stride=2, padding=(1, 0, 1)),
          {"basic": (lambda m: m((1, 2, 3, 4, 3)), lambda m: m((3, 2, 3, 2, 2)))}),
    ccase("conv3d_groups", lambda x, w: F.conv3d(x, w, padding=(0, 1, 1), groups=2),
          {"basic": (lambda m: m((1, 4, 3, 4, 5)), lambda m: m((4, 2, 2, 3, 3)))}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_convolution(case):
    run_case(case)


def test_conv_module_with_weights():
    """nn.Conv2d: the weight and bias are parameters bound by pointer, not inputs."""
    conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1)
    x = torch.randn(2, 3, 16, 15)
    run_case(Case("conv_module", lambda x: conv(x), dtypes=(torch.float32,), variants={},
                  extra_inputs=[lambda d: (x.to(d),), lambda d: (x.to(memory_format=torch.channels_last),)]))


def test_native_without_fallback():
    """The whole family compiles with fallback='error': no op of it needs the ATen fallback."""
    def model(x, w, wt):
        y = F.conv2d(x, w, padding=1, groups=2)
        return F.conv_transpose2d(y, wt, stride=2)

    x, w, wt = torch.randn(1, 4, 5, 5), torch.randn(6, 2, 3, 3), torch.randn(6, 3, 2, 2)
    backend = CountingBackend({"fallback": "error"})
    got = torch.compile(model, backend=backend, fullgraph=True)(x, w, wt)
    torch.testing.assert_close(got, model(x, w, wt), rtol=1e-4, atol=1e-4)
    assert len(backend.compiled) == 1


def test_dynamic_batch_compiles_once():
    """A small CNN with a dynamic batch dim: conv, pooling and upsampling keep their spatial
    sizes static and serve every batch size from one compile."""
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def model(x):
        y, i = F.max_pool2d(conv(x), 2, return_indices=True)
        return F.avg_pool2d(y, 2, ceil_mode=True), i, F.interpolate(y, scale_factor=2, mode="bilinear")

    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    for n in (2, 3, 5):
        x = torch.randn(n, 3, 8, 9)
        torch._dynamo.mark_dynamic(x, 0)
        for got, expected in zip(compiled(x), model(x)):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    assert len(backend.compiled) == 1
