"""Reductions (sum, mean, prod, amax/amin, argmax/argmin, max/min.dim, any, var, cumsum) against
eager: every dtype torch supports, dims negative and multiple, keepdim, 0-d and non-contiguous
inputs. Integer sums accumulate in i64 as torch does."""

from __future__ import annotations

import pytest
import torch

from op_harness import FLOATS, Case, f32, run_case

REDUCE_VARIANTS = {
    "3d": (lambda m: m((2, 3, 4)),),
    "0d": (lambda m: m(()),),
    "transposed": (lambda m: m((4, 3)).t(),),
    "sliced": (lambda m: m((3, 8))[:, 1::2],),
    "expanded": (lambda m: m((3, 1)).expand(3, 5),),
    "size1": (lambda m: m((1, 4)),),
}
SHORT = ("3d",)
# Reductions that accept empty inputs (sum/prod/any/mean give their identity or NaN).
EMPTY = {**REDUCE_VARIANTS, "empty": (lambda m: m((0, 4)),)}


def rcase(name, fn, variants=REDUCE_VARIANTS, **kw):
    return Case(name, fn, variants=variants, short=SHORT, **kw)


CASES = [
    rcase("sum", lambda x: x.sum(), variants=EMPTY),
    rcase("sum_dim", lambda x: x.sum(-1), variants=EMPTY),
    rcase("sum_dims_keepdim", lambda x: x.sum((0, -1), keepdim=True)),
    rcase("sum_dtype", lambda x: x.sum(0, dtype=torch.float64)),
    rcase("mean", lambda x: x.mean(), dtypes=FLOATS),
    rcase("mean_dim", lambda x: x.mean(-1, keepdim=True), dtypes=FLOATS),
    rcase("mean_dims", lambda x: x.mean((0, -1)), dtypes=FLOATS),
    rcase("prod", lambda x: x.prod(), domains=((-2, 2),)),
    rcase("prod_dim", lambda x: x.prod(-1, keepdim=True), domains=((-2, 2),)),
    rcase("amax", lambda x: x.amax(-1)),
    rcase("amin_keepdim", lambda x: x.amin((0, -1), keepdim=True)),
    rcase("max_all", lambda x: x.max()),
    rcase("max_dim", lambda x: x.max(-1)),
    rcase("min_dim_keepdim", lambda x: x.min(0, keepdim=True)),
    rcase("argmax", lambda x: x.argmax(), domains=((-3, 3),)),
    rcase("argmax_dim", lambda x: x.argmax(-1), domains=((-3, 3),)),
    rcase("argmin_dim_keepdim", lambda x: x.argmin(0, keepdim=True), domains=((-3, 3),)),
    rcase("argmax_keepdim_all", lambda x: torch.argmax(x, keepdim=True), domains=((-3, 3),)),
    rcase("any", lambda x: x.any(), variants=EMPTY),
    rcase("any_dim", lambda x: x.any(-1)),
    rcase("any_dims", lambda x: torch.any(x, dim=(0, -1))),
    rcase("all_dim", lambda x: x.all(-1)),
    rcase("var", lambda x: x.var(), dtypes=FLOATS),
    rcase("var_dim_unbiased_false", lambda x: x.var(-1, unbiased=False), dtypes=FLOATS),
    rcase("var_correction", lambda x: torch.var(x, dim=(0, -1), correction=0, keepdim=True), dtypes=FLOATS),
    rcase("std", lambda x: x.std(-1), dtypes=FLOATS),
    rcase("var_mean", lambda x: torch.var_mean(x, -1), dtypes=FLOATS),
    rcase("cumsum", lambda x: x.cumsum(-1)),
    rcase("cumsum_dim0", lambda x: x.cumsum(0)),
    rcase("logsumexp", lambda x: torch.logsumexp(x, -1), dtypes=FLOATS),
    rcase("norm", lambda x: torch.linalg.vector_norm(x, dim=-1), dtypes=FLOATS),
]


# Reductions over an axis the input is not contiguous along, which the cpu runtime runs as a
# column row kernel (many output columns side by side, codegen::Kernel::lane_axis): more columns
# than one work item's run (1,030 split over threads in two runs, 2,100 in three of at most
# 1,024), an outer dim besides, a run of odd length, a sliced and an expanded input.
COLUMN_VARIANTS = {
    "rows_5x1030": (lambda m: m((5, 1030)),),
    "rows_3x2100": (lambda m: m((3, 2100)),),
    "middle_3x7x40": (lambda m: m((3, 7, 40)),),
    "sliced_9x37": (lambda m: m((9, 40))[:, 3:],),
    "expanded_4x33": (lambda m: m((1, 33)).expand(4, 33),),
}


def ccase(name, fn, **kw):
    return Case(name, fn, variants=COLUMN_VARIANTS, short=tuple(COLUMN_VARIANTS), **kw)


COLUMN_CASES = [
    ccase("column_sum", lambda x: x.sum(0)),
    ccase("column_sum_middle_keepdim", lambda x: x.sum(-2, keepdim=True)),
    ccase("column_mean", lambda x: x.mean(0), dtypes=FLOATS),
    ccase("column_prologue_epilogue", lambda x: ((x * 2 + 1).sum(0) / 3, x.amax(0) - 1), dtypes=FLOATS),
    ccase("column_amax_amin", lambda x: (x.amax(0), x.amin(0))),
    ccase("column_prod", lambda x: x.prod(0), domains=((-1.5, 1.5),), tolerance_scale=4.0),
    ccase("column_any_all", lambda x: (x.any(0), x.all(0))),
    Case("column_max_nan", lambda x: (x.amax(0), x.amin(0)), dtypes=FLOATS, variants={},
         extra_inputs=[lambda d: (torch.tensor([[1.0, float("nan"), 2.0], [float("nan"), 0.0, -1.0],
                                                [3.0, 4.0, float("nan")]] * 40).to(d),)]),
]


# Reductions over adjacent dims, which the translator views as one dim where the layout allows
# it without a copy (merge_reduced_dims): a dense NCHW tensor, a channels-last one, W sliced, H
# expanded, and one large enough for several work items. The exported graph reads its inputs
# dense, so the layouts that do not merge are made inside the graph (the `in_graph` cases).
MERGED_VARIANTS = {
    "nchw_2x3x4x5": (lambda m: m((2, 3, 4, 5)),),
    "channels_last": (lambda m: m((2, 4, 5, 3)).permute(0, 3, 1, 2),),
    "sliced_w": (lambda m: m((2, 3, 4, 9))[..., 2:7],),
    "expanded_h": (lambda m: m((2, 3, 1, 5)).expand(2, 3, 4, 5),),
    "large_3x16x24x40": (lambda m: m((3, 16, 24, 40)),),
}


def mcase(name, fn, **kw):
    return Case(name, fn, variants=MERGED_VARIANTS, short=tuple(MERGED_VARIANTS), **kw)


MERGED_CASES = [
    mcase("merged_channel_mean", lambda x: x.mean((0, 2, 3)), dtypes=FLOATS),
    mcase("merged_sum_hw_keepdim", lambda x: x.sum((2, 3), keepdim=True)),
    mcase("merged_sum_leading", lambda x: x.sum((0, 1))),
    mcase("merged_amax_amin", lambda x: (x.amax((1, 2, 3)), x.amin((0, 2, 3), keepdim=True))),
    mcase("merged_prod_all", lambda x: x[:1, :2].prod(), domains=((-1.5, 1.5),), tolerance_scale=4.0),
    mcase("merged_var_std", lambda x: (torch.var(x, (0, 2, 3)), torch.std(x, (2, 3), keepdim=True)), dtypes=FLOATS),
    mcase("merged_norms", lambda x: (torch.linalg.vector_norm(x, dim=(2, 3)),
                                     torch.linalg.vector_norm(x, ord=float("inf"), dim=(0, 2, 3), keepdim=True)),
          dtypes=FLOATS),
    mcase("merged_in_graph_sliced_w", lambda x: (x[..., 1:-1].sum((2, 3)), x[..., ::2].mean((0, 2, 3))), dtypes=FLOATS),
    mcase("merged_in_graph_expanded_h", lambda x: x[:, :, :1].expand(-1, -1, 6, -1).amax((0, 2, 3))),
    mcase("merged_in_graph_transposed", lambda x: x.transpose(2, 3).sum((2, 3))),
    mcase("merged_dtype_arg", lambda x: (x.mean((0, 2, 3), dtype=torch.float64),
                                         torch.linalg.vector_norm(x, dim=(2, 3), dtype=torch.float64)), dtypes=FLOATS),
    mcase("merged_empty_hw", lambda x: (x[:, :, :0].sum((2, 3)), x[:, :, :0].mean((0, 2, 3))), dtypes=FLOATS),
]


@pytest.mark.parametrize("case", CASES + COLUMN_CASES + MERGED_CASES, ids=str)
def test_reduction(case):
    run_case(case)


def _ir_node_count(fn, x):
    from luminal.backend import luminal_backend

    programs = []

    def backend(gm, example_inputs):
        programs.append(luminal_backend(gm, example_inputs))
        return programs[-1]

    torch._dynamo.reset()
    torch.compile(fn, backend=backend, dynamic=False)(x)
    return programs[0].stats["ir_node_count"]


def test_adjacent_reduced_dims_are_one_reduction():
    """mean over (0, 2, 3) of a dense NCHW tensor reduces H and W as one dim (rows of H*W, one
    pass), so it has as many IR nodes as mean over (0, 2); with W sliced they cannot merge."""
    x = torch.randn(2, 3, 4, 5)
    assert _ir_node_count(lambda t: t.mean((0, 2, 3)), x) == _ir_node_count(lambda t: t.mean((0, 2)), x)
    assert _ir_node_count(lambda t: t[..., 2:4].mean((0, 2, 3)), x) == _ir_node_count(lambda t: t[..., 2:4].mean((0, 2)), x) + 1


def test_argmax_nan_and_ties():
    """torch returns the first maximum, and NaN counts as the maximum (first NaN wins)."""
    inputs = [
        lambda d: (torch.tensor([[1.0, 3.0, 3.0, 0.0], [float("nan"), 1.0, float("nan"), 5.0]]).to(d),),
        lambda d: (torch.tensor([[2.0, 2.0], [-1.0, -1.0]]).to(d),),
    ]
    run_case(Case("argmax_nan", lambda x: (x.argmax(-1), x.argmin(-1), x.max(-1), x.min(-1)), dtypes=(f32, torch.float64),
                  variants={}, extra_inputs=inputs))


# f32 and bf16 cumsums along a contiguous axis run eight rows at a time (codegen::ScanSpec::
# row_blocks, the prelude's lm_cumsum_rows8): each row still adds in the scalar loop's order and
# accumulator, so the bits are eager's (double sums for f32, float for bf16). Rows: whole blocks,
# a block of 5 real rows (3 repeated), 3 rows left to the scalar loop, one row; lengths with and
# without a tail of fewer than 8; rows of a wider tensor (each row's own start); a cumsum over a
# non-contiguous axis (the scalar loop); both ISAs.
SCAN_BLOCK_INPUTS = {
    "blocks_64x1003": lambda: torch.randn(64, 1003),
    "partial_block_13x37": lambda: torch.randn(13, 37),
    "scalar_rows_11x40": lambda: torch.randn(11, 40),
    "one_row_1x4099": lambda: torch.randn(1, 4099),
    "rank3_3x5x77": lambda: torch.randn(3, 5, 77),
    "specials_9x21": lambda: torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, 3e38, 1e-40, -2.0])
    .repeat(27).view(9, 21),
}


def _same_bits(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    as_int = {torch.bfloat16: torch.int16, torch.float32: torch.int32}[expected.dtype]
    differ = (actual.view(as_int) != expected.view(as_int)) & ~(actual.isnan() & expected.isnan())
    return actual.shape == expected.shape and not differ.any()


@pytest.mark.parametrize("isa", ["avx2", "native"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", list(SCAN_BLOCK_INPUTS))
def test_cumsum_row_blocks_give_eagers_bits(name, dtype, isa, tmp_path):
    torch.manual_seed(0)
    x = SCAN_BLOCK_INPUTS[name]().to(dtype)
    wide = torch.cat([x, x], dim=-1)
    n = x.shape[-1]
    # The slice is taken in the graph (an input arrives dense): rows of a wider tensor.
    fn = lambda x, wide: (x.cumsum(-1), wide[..., 1 : 1 + n].cumsum(-1), x.transpose(0, -1).cumsum(-1))  # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="luminal", options={"cpu_isa": isa, "debug_dir": str(tmp_path)})
    for actual, expected in zip(compiled(x, wide), fn(x, wide)):
        assert _same_bits(actual, expected), f"{name} {dtype} {isa}: cumsum differs from eager's bits"
    kernels = [p.read_text() for p in tmp_path.glob("kernels_*.cpp")]
    assert sum(k.count("lm_cumsum_rows8(lm_rows_in") for k in kernels) == 2, "contiguous rows not scanned in blocks"
