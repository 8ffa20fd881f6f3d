"""Every backward op our model families' backward graphs contain, translated natively (the
harness compiles with fallback='error'), its gradients against eager's in f32 and bf16 over
contiguous and non-contiguous inputs.

Most backward ops (threshold_backward, native_layer_norm_backward, _softmax_backward_data,
gelu_backward, embedding_dense_backward, native_batch_norm_backward, ...) reach luminal already
decomposed into core ATen by torch's decomposition table, as they reach inductor; those cases
prove the gradients. The ones torch keeps whole (convolution_backward, the pooling backwards)
name the op, and the harness checks that the backward graph holds it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from grad_harness import GradCase, run_grad_case

f32, bf16, f64 = torch.float32, torch.bfloat16, torch.float64


def unary(shape, transposed_shape=None):
    """A contiguous input and a transposed one of the same logical shape."""
    flipped = transposed_shape or tuple(reversed(shape))
    return {"contiguous": (lambda m: m(shape),), "transposed": (lambda m: m(flipped).transpose(0, -1),)}


ROWS = unary((6, 10))
CASES = [
    GradCase("relu", F.relu, ROWS),
    GradCase("leaky_relu", lambda x: F.leaky_relu(x, 0.1), ROWS),
    GradCase("elu", F.elu, ROWS),
    GradCase("hardtanh", F.hardtanh, ROWS),
    GradCase("softplus", F.softplus, ROWS),
    GradCase("sigmoid", torch.sigmoid, ROWS),
    GradCase("tanh", torch.tanh, ROWS),
    GradCase("gelu", F.gelu, ROWS),
    GradCase("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), ROWS),
    GradCase("silu", F.silu, ROWS),
    GradCase("hardswish", F.hardswish, ROWS),
    GradCase("softmax", lambda x: F.softmax(x, -1), ROWS),
    GradCase("log_softmax", lambda x: F.log_softmax(x, -1), ROWS),
    GradCase(
        "layer_norm",
        lambda x, w, b: F.layer_norm(x, (10,), w, b),
        {
            "contiguous": (lambda m: m((6, 10)), lambda m: m((10,)), lambda m: m((10,))),
            "transposed": (lambda m: m((10, 6)).t(), lambda m: m((20,))[::2], lambda m: m((10,))),
        },
    ),
    GradCase(
        "rms_norm",
        lambda x, w: F.rms_norm(x, (10,), w, eps=1e-6),
        {
            "contiguous": (lambda m: m((6, 10)), lambda m: m((10,))),
            "transposed": (lambda m: m((10, 6)).t(), lambda m: m((10,))),
        },
    ),
    GradCase(
        "group_norm",
        lambda x, w, b: F.group_norm(x, 2, w, b),
        {"contiguous": (lambda m: m((3, 4, 5)), lambda m: m((4,)), lambda m: m((4,)))},
    ),
    GradCase(
        "batch_norm_training",
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        {
            "nchw": (lambda m: m((4, 3, 5, 5)), lambda m: m((3,)), lambda m: m((3,))),
            "channels_last": (
                lambda m: m((4, 5, 5, 3)).permute(0, 3, 1, 2),
                lambda m: m((3,)),
                lambda m: m((3,)),
            ),
        },
    ),
    GradCase(
        "conv2d",
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        {
            "contiguous": (lambda m: m((2, 3, 9, 9)), lambda m: m((4, 3, 3, 3)), lambda m: m((4,))),
            "channels_last": (
                lambda m: m((2, 9, 9, 3)).permute(0, 3, 1, 2),
                lambda m: m((4, 3, 3, 3)),
                lambda m: m((4,)),
            ),
        },
        "aten.convolution_backward.default",
        tolerance_scale=4,
    ),
    GradCase(
        "conv1d_groups_dilation",
        lambda x, w: F.conv1d(x, w, groups=2, dilation=2),
        {"contiguous": (lambda m: m((2, 4, 11)), lambda m: m((6, 2, 3)))},
        "aten.convolution_backward.default",
        tolerance_scale=4,
    ),
    GradCase(
        "conv3d",
        lambda x, w: F.conv3d(x, w, padding=1),
        {"contiguous": (lambda m: m((1, 2, 4, 4, 4)), lambda m: m((3, 2, 3, 3, 3)))},
        "aten.convolution_backward.default",
        tolerance_scale=4,
    ),
    GradCase(
        "conv_transpose2d",
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1),
        {"contiguous": (lambda m: m((2, 3, 5, 5)), lambda m: m((3, 4, 3, 3)), lambda m: m((4,)))},
        "aten.convolution_backward.default",
        tolerance_scale=4,
    ),
    GradCase(
        "max_pool2d",
        lambda x: F.max_pool2d(x, 3, 2, 1),
        {
            "contiguous": (lambda m: m((2, 3, 8, 8)),),
            "channels_last": (lambda m: m((2, 8, 8, 3)).permute(0, 3, 1, 2),),
        },
        "aten.max_pool2d_with_indices_backward.default",
    ),
    GradCase(
        "max_pool3d",
        lambda x: F.max_pool3d(x, 2),
        {"contiguous": (lambda m: m((1, 2, 4, 4, 4)),)},
        "aten.max_pool3d_with_indices_backward.default",
    ),
    GradCase(
        "avg_pool2d",
        lambda x: F.avg_pool2d(x, 3, 2, 1),
        {
            "contiguous": (lambda m: m((2, 3, 8, 8)),),
            "transposed": (lambda m: m((2, 3, 8, 8)).transpose(2, 3),),
        },
        "aten.avg_pool2d_backward.default",
    ),
    GradCase(
        "avg_pool3d",
        lambda x: F.avg_pool3d(x, 2, count_include_pad=False, padding=1),
        {"contiguous": (lambda m: m((1, 2, 4, 4, 4)),)},
        "aten.avg_pool3d_backward.default",
        dtypes=(f32,),  # eager's CPU avg_pool3d has no bf16 kernel
    ),
    GradCase(
        "adaptive_avg_pool2d",
        lambda x: F.adaptive_avg_pool2d(x, 3),
        {"contiguous": (lambda m: m((2, 3, 8, 7)),)},
        "aten._adaptive_avg_pool2d_backward.default",
    ),
    GradCase(
        "adaptive_avg_pool3d",
        lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)),
        {
            "contiguous": (lambda m: m((1, 2, 5, 7, 4)),),
            "transposed": (lambda m: m((1, 2, 4, 7, 5)).transpose(2, 4),),
        },
        "aten._adaptive_avg_pool3d_backward.default",
    ),
    GradCase(
        "embedding",
        lambda ids, w: F.embedding(ids, w),
        {
            "repeated_ids": (lambda m: m((3, 7)), lambda m: m((5, 4))),
            "transposed_table": (lambda m: m((2, 9)), lambda m: m((4, 5)).t()),
        },
        int_args={0: 5},
    ),
    GradCase(
        "sdpa_causal",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        {
            "contiguous": (lambda m: m((2, 2, 6, 8)),) * 3,
            # [B, L, H, E] transposed to [B, H, L, E], as every HF attention does.
            "heads_transposed": (lambda m: m((2, 6, 2, 8)).transpose(1, 2),) * 3,
        },
        tolerance_scale=2,
    ),
    GradCase(
        "sdpa_gqa_bool_mask",
        lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.ones(6, 6, dtype=torch.bool).tril(), enable_gqa=True
        ),
        {"contiguous": (lambda m: m((1, 4, 6, 8)), lambda m: m((1, 2, 6, 8)), lambda m: m((1, 2, 6, 8)))},
        tolerance_scale=2,
    ),
    GradCase(
        "cross_entropy",
        lambda x, y: F.cross_entropy(x, y, label_smoothing=0.1),
        {
            "contiguous": (lambda m: m((6, 10)), lambda m: m((6,))),
            "transposed": (lambda m: m((10, 6)).t(), lambda m: m((6,))),
        },
        int_args={1: 10},
    ),
    GradCase(
        "nll_loss",
        lambda x, y: F.nll_loss(x, y),
        {"contiguous": (lambda m: m((6, 10)), lambda m: m((6,)))},
        int_args={1: 10},
    ),
    GradCase("mse_loss", F.mse_loss, {"contiguous": (lambda m: m((6, 10)), lambda m: m((6, 10)))}),
    GradCase(
        "bce_with_logits",
        lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
        {"contiguous": (lambda m: m((6, 10)), lambda m: m((6, 10)))},
    ),
    GradCase(
        "gather_and_index",
        lambda x: (
            x.gather(1, torch.tensor([[0, 1], [2, 3], [1, 1], [9, 0], [4, 4], [5, 6]]))
            + x[[0, 2, 2], :2].sum()
        ),
        ROWS,
    ),
    GradCase("max_and_topk", lambda x: x.amax(1) + x.topk(3, 1).values.sum(1) + x.max(1).values, ROWS),
    GradCase("cumsum_and_logsumexp", lambda x: x.cumsum(1) + x.logsumexp(1, keepdim=True), ROWS),
    GradCase(
        "matmul_family",
        lambda a, b, c: torch.baddbmm(c, a, b) + torch.einsum("bij,bjk->bik", a, b),
        {
            "contiguous": (lambda m: m((2, 3, 4)), lambda m: m((2, 4, 5)), lambda m: m((2, 3, 5))),
            "transposed": (
                lambda m: m((2, 4, 3)).transpose(1, 2),
                lambda m: m((2, 5, 4)).transpose(1, 2),
                lambda m: m((5,)),
            ),
        },
        tolerance_scale=2,
    ),
    GradCase(
        "interpolate_bilinear",
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        {"contiguous": (lambda m: m((1, 2, 4, 4)),)},
    ),
    GradCase(
        "reflection_pad",
        lambda x: F.pad(x, (2, 2), mode="reflect"),
        {"contiguous": (lambda m: m((2, 3, 8)),)},
    ),
]


@pytest.mark.parametrize("dtype", [f32, bf16], ids=["f32", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_backward_op_matches_eager(case, dtype):
    if dtype not in case.dtypes:
        pytest.skip(f"{case.name} is not defined for {dtype}")
    run_grad_case(case, dtype)


def test_f64_gradients_are_exact_to_f64():
    """The backward's reductions run in the input's precision: f64 stays f64."""
    layer_norm = next(case for case in CASES if case.name == "layer_norm")
    run_grad_case(GradCase("layer_norm_f64", layer_norm.fn, layer_norm.variants, dtypes=(f64,)), f64)
