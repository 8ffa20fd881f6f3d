"""Movement ops (view/reshape, permute, transpose, expand, slice, select, squeeze/unsqueeze, cat,
split, flip, repeat, pad, diagonal, the *_scatter ops, clone/copy/_to_copy) against eager."""

from __future__ import annotations

import pytest
import torch

from op_harness import ALL, FLOATS, INTS, Case, f32, run_case

V3 = {
    "3d": (lambda m: m((2, 3, 4)),),
    "transposed": (lambda m: m((2, 4, 3)).transpose(1, 2),),
    "sliced": (lambda m: m((2, 3, 8))[..., ::2],),
    "expanded": (lambda m: m((1, 3, 4)).expand(2, 3, 4),),
}
SHORT = ("transposed",)


def mcase(name, fn, variants=V3, **kw):
    return Case(name, fn, variants=variants, short=SHORT, **kw)


PAIR = {
    "3d": (lambda m: m((2, 3, 4)), lambda m: m((2, 5, 4))),
    "noncontiguous": (lambda m: m((2, 4, 3)).transpose(1, 2), lambda m: m((2, 5, 8))[..., ::2]),
}

CASES = [
    mcase("view", lambda x: x.reshape(6, 4)),
    mcase("view_infer", lambda x: x.reshape(-1, 2)),
    mcase("flatten", lambda x: x.flatten()),
    mcase("permute", lambda x: x.permute(2, 0, 1) + 0),
    mcase("permute_negative", lambda x: x.permute(-1, -3, -2).contiguous()),
    mcase("transpose", lambda x: x.transpose(-1, 0).contiguous()),
    mcase("t", lambda x: x[0].t().contiguous()),
    mcase("expand", lambda x: x[:, :1].expand(2, 5, 4).contiguous()),
    mcase("expand_new_dim", lambda x: x.expand(3, 2, 3, 4).contiguous()),
    mcase("slice", lambda x: x[:, 1:, ::2].contiguous()),
    mcase("slice_negative", lambda x: x[..., -3:-1].contiguous()),
    mcase("slice_empty", lambda x: x[:, 5:].contiguous()),
    mcase("select", lambda x: x[:, -1].contiguous()),
    mcase("unsqueeze", lambda x: x.unsqueeze(-1).contiguous()),
    mcase("squeeze", lambda x: x[:, :1].squeeze().contiguous()),
    mcase("squeeze_dim", lambda x: x[:1].squeeze(0).contiguous()),
    mcase("clone", lambda x: x.clone()),
    mcase("contiguous", lambda x: x.contiguous()),
    mcase("to_float", lambda x: x.to(torch.float32)),
    mcase("to_int", lambda x: x.to(torch.int32)),
    mcase("to_bool", lambda x: x.to(torch.bool)),
    mcase("to_bf16", lambda x: x.to(torch.bfloat16)),
    mcase("split", lambda x: x.split(2, dim=-1)),
    mcase("split_uneven", lambda x: x.split([1, 2], dim=1)),
    mcase("chunk", lambda x: x.chunk(3, dim=-1)),
    mcase("unbind", lambda x: x.unbind(1)),
    mcase("flip", lambda x: x.flip(-1)),
    mcase("flip_dims", lambda x: x.flip(0, 2)),
    mcase("repeat", lambda x: x.repeat(2, 1, 3)),
    mcase("repeat_new_dims", lambda x: x.repeat(2, 1, 1, 2)),
    mcase("pad", lambda x: torch.nn.functional.pad(x, (1, 2))),
    mcase("pad_value", lambda x: torch.nn.functional.pad(x, (0, 1, 2, 0), value=3)),
    mcase("pad_negative", lambda x: torch.nn.functional.pad(x, (-1, 1, 0, -1))),
    mcase("diagonal", lambda x: torch.diagonal(x, dim1=1, dim2=2).contiguous()),
    mcase("diagonal_offset", lambda x: torch.diagonal(x, offset=1, dim1=-1, dim2=-2).contiguous()),
    mcase("tril", lambda x: torch.tril(x)),
    mcase("roll", lambda x: torch.roll(x, 1, -1)),
    mcase("select_scatter", lambda x: torch.select_scatter(x, x[:, 0], 1, -1)),
    mcase("slice_scatter", lambda x: torch.slice_scatter(x, x[..., 2:], -1, 1, 4, 2)),
    mcase("fill", lambda x: x.clone().fill_(2)),
    Case("cat", lambda a, b: torch.cat([a, b], dim=1), arity=2, variants=PAIR, short=("noncontiguous",)),
    Case("cat_negative_dim", lambda a, b: torch.cat([a, a, b], dim=-2), arity=2, variants=PAIR, short=("3d",)),
    # Up to four pieces of static length select per element; more are scattered: both paths.
    Case("cat_last_dim_unequal", lambda a, b: torch.cat([a, a[..., :3]], dim=-1), arity=2, variants=PAIR,
         short=("noncontiguous",)),
    Case("cat_five_pieces", lambda a, b: torch.cat([a, b, a, b, a], dim=1), arity=2, variants=PAIR, short=("3d",)),
    Case("cat_dim0", lambda a, b: torch.cat([a, b[:1, :3]], dim=0) * 2, arity=2, variants=PAIR,
         short=("3d",)),
    # rotate_half: a negated piece (read through the negation), fused with its consumer.
    mcase("rotate_half", lambda x: x * 3 + torch.cat((-x[..., 2:], x[..., :2]), dim=-1), dtypes=FLOATS + INTS),
    Case("stack", lambda a, b: torch.stack([a, a], dim=-1), arity=2, variants=PAIR, short=("3d",)),
    Case("copy", lambda a, b: a.clone().copy_(b[:, :3]), arity=2, variants=PAIR, short=("3d",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_movement(case):
    run_case(case)


def test_cat_mixed_dtypes():
    """cat promotes its inputs to their common dtype."""
    inputs = [lambda _d: (torch.ones(2, 3, dtype=torch.int32), torch.zeros(2, 1, dtype=torch.float16)),
              lambda _d: (torch.ones(2, 3, dtype=torch.uint8), torch.zeros(2, 1, dtype=torch.int8))]
    run_case(Case("cat_mixed", lambda a, b: torch.cat([a, b], dim=1), dtypes=(f32,), arity=2, variants={}, extra_inputs=inputs))


def test_cat_of_legacy_empty_tensors():
    """Legacy [0] tensors are skipped but promote; cat of nothing else is an empty [0] (OpInfo)."""
    inputs = [lambda _d: (torch.ones(2, 3, dtype=torch.int32), torch.zeros(0, dtype=torch.float16))]
    run_case(Case("cat_legacy_empty", lambda a, b: (torch.cat([a, b, a], dim=1), torch.cat([b, b.to(torch.int32)])),
                  dtypes=(f32,), arity=2, variants={}, extra_inputs=inputs))


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rotate_half_fuses_into_one_kernel(tmp_path, dtype):
    """cat selects its pieces per element, so rope (rotate_half, then the multiply-add) is one
    pointwise kernel: no zeroed buffer, no scatter, no materialised negation."""
    x, cos, sin = (torch.randn(3, 5, 16).to(dtype), torch.randn(5, 16).to(dtype), torch.randn(5, 16).to(dtype))
    compiled = torch.compile(rope, backend="luminal", options={"debug_dir": str(tmp_path), "fallback": "error"})
    torch.testing.assert_close(compiled(x, cos, sin), rope(x, cos, sin))
    steps = [line for line in (tmp_path / "cpu_stats.txt").read_text().splitlines() if line.startswith("kernel")]
    assert len(steps) == 1 and "Where" in steps[0] and "scatter" not in steps[0], steps


def test_rotate_half_with_a_dynamic_length_splits_its_pieces_as_a_static_one(tmp_path):
    """With a symbolic sequence length (a dynamic-shape prefill) rope's cat still selects its
    pieces by comparing the loop index with the half: the arange behind that index is read with a
    stride of 16 * S, a whole number of its periods, so the kernel loops over each piece without
    a per-element division, as for static shapes (the division and both pieces' gathers per
    element made gemma3's rope a scalar loop, 12% of its prefill). Eager's values at every length."""
    from conftest import CountingBackend

    backend = CountingBackend({"debug_dir": str(tmp_path), "fallback": "error"})
    compiled = torch.compile(rope, backend=backend)
    for length in (3, 7, 33):
        x, cos, sin = torch.randn(2, 4, length, 16), torch.randn(length, 16), torch.randn(length, 16)
        torch._dynamo.mark_dynamic(x, 2)
        torch._dynamo.mark_dynamic(cos, 0)
        torch._dynamo.mark_dynamic(sin, 0)
        torch.testing.assert_close(compiled(x, cos, sin), rope(x, cos, sin))
    assert len(backend.compiled) == 1
    [source] = [path.read_text() for path in tmp_path.glob("kernels_*.cpp")]
    kernel = source[source.index("// pointwise kernel"):]
    assert "Where" in kernel.splitlines()[0] and "lm_symbols[0]" in kernel, kernel[:3000]
    assert "for (int64_t i3 = INT64_C(8); i3 < INT64_C(16)" in kernel, kernel[:3000]
    assert ") / INT64_C(1) % INT64_C(16))" not in kernel, kernel[:3000]


SCATTER_VARIANTS = {"2d": (lambda m: m((3, 5)),)}


def _index(dim_size, shape, dim):
    # A permutation per row, so no index repeats (repeated scatter targets are unordered in torch).
    g = torch.Generator().manual_seed(0)
    idx = torch.stack([torch.randperm(dim_size, generator=g)[: shape[dim]] for _ in range(shape[1 - dim])], dim=1 - dim)
    return idx


def test_scatter_family():
    """scatter.src (src larger than index), scatter.value, scatter_add (repeats accumulate)."""
    idx0 = _index(3, (2, 5), 0)
    idx_rep = torch.tensor([[0, 1, 0, 2, 0], [2, 2, 1, 0, 0]])

    def fn(x, src):
        return (x.scatter(0, idx0, src), x.scatter(1, idx0[:, :3], 2.0), x.scatter_add(0, idx_rep, src[:2]),
                torch.scatter(x, -1, idx0, src[:2]))

    extra = [lambda d: (torch.randn(3, 5).to(d), torch.randn(4, 6).to(d))]
    run_case(Case("scatter", fn, dtypes=ALL, arity=2, variants={}, extra_inputs=extra))
