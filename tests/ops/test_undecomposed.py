"""Core ATen overloads that run_decompositions() rewrites into others before either Python path
(torch.compile, luminal.compile) reaches the translator. A PT2 archive exported elsewhere can
still contain them, so each is checked on a program exported without decompositions and handed to
the core directly, against eager, over the dtypes torch supports."""

from __future__ import annotations

import pytest
import torch

from op_harness import ALL, COVERAGE, FLOATS, Case, compile_undecomposed, dtype_name, run_case

A = torch.ops.aten

CASES = [
    Case("var_dim", lambda x: (A.var.dim(x, [1], True, False), A.var.dim(x, [-1], False, True)), dtypes=FLOATS,
         variants={"2d": (lambda m: m((3, 5)),), "transposed": (lambda m: m((5, 3)).t(),),
                   "3d": (lambda m: m((2, 3, 4)),)}, tolerance_scale=5),
    Case("var_dims", lambda x: A.var.dim(x, [0, 2], False, True), dtypes=FLOATS,
         variants={"3d": (lambda m: m((2, 3, 4)),), "sliced": (lambda m: m((2, 3, 8))[..., ::2],)},
         tolerance_scale=5),
    Case("squeeze_dim", lambda x: (A.squeeze.dim(x, 0), A.squeeze.dim(x, -1), A.squeeze.dim(x, 1)),
         variants={"size1": (lambda m: m((1, 4, 1)),), "expanded": (lambda m: m((1, 1)).expand(1, 3, 1),)}),
    Case("fill_scalar", lambda x: (A.fill.Scalar(x, 7), A.fill.Scalar(x, True))),
    Case("select_scatter", lambda x, y: (A.select_scatter.default(x, y, 1, 0), A.select_scatter.default(x, y, 1, -1)),
         variants={"2d": (lambda m: m((3, 4)), lambda m: m((3,))),
                   "transposed": (lambda m: m((4, 3)).t(), lambda m: m((6,))[::2])}, arity=2),
    Case("atan2_out", lambda x, y: A.atan2.out(x, y, out=A.empty.memory_format(list(x.shape), dtype=x.dtype)),
         dtypes=FLOATS, arity=2,
         variants={"same": (lambda m: m((3, 4)), lambda m: m((3, 4))),
                   "noncontiguous": (lambda m: m((4, 3)).t(), lambda m: m((3, 8))[:, ::2])}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_undecomposed(case):
    run_case(case, compile=compile_undecomposed)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_empty_has_the_asked_shape_and_dtype(dtype):
    """empty's values are undefined: its shape, dtype and what a later op computes from it are not."""

    def fn(x):
        return (A.empty.memory_format([2, 3], dtype=dtype), A.empty_permuted.default([2, 3], [1, 0], dtype=dtype),
                A.empty_strided.default([2, 3], [1, 2], dtype=dtype), x + 1)

    x = torch.ones(2, 3)
    targets: set[str] = set()
    *empties, y = compile_undecomposed(fn, [x], targets)[0]
    assert [(e.shape, e.dtype) for e in empties] == [((2, 3), dtype)] * 3
    torch.testing.assert_close(y, x + 1)
    for target in targets - {"aten::add.Tensor"}:
        COVERAGE.setdefault(target, set()).add(dtype_name(dtype))
