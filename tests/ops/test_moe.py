"""Mixture-of-experts ops against eager: histc (any rank, fixed and data-derived ranges, values on
the edges and outside, NaN and inf), transformers' grouped_mm_fallback custom op and
aten._grouped_mm in each of its forms, with empty groups, rows past offs[-1], non-contiguous
operands, and one compile serving every routing (offs is a runtime tensor)."""

from __future__ import annotations

import pytest
import torch
import transformers.integrations.moe  # noqa: F401 - registers torch.ops.transformers.grouped_mm_fallback

from conftest import CountingBackend, assert_close
from op_harness import FLOATS, Case, bf16, f32, run_case

HIST_VARIANTS = {
    "1d": (lambda m: m((23,)),),
    "3d": (lambda m: m((2, 3, 5)),),
    "0d": (lambda m: m(()),),
    "empty": (lambda m: m((0, 4)),),
    "transposed": (lambda m: m((6, 4)).t(),),
    "sliced": (lambda m: m((4, 12))[:, 1::3],),
    "expanded": (lambda m: m((3, 1)).expand(3, 4),),
}


def edges(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """Values on the bin edges of [-3, 3] in 6 bins, on both outer edges, just outside, NaN, inf."""
    nan, inf = float("nan"), float("inf")
    values = [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 3.0, -3.5, 3.5, nan, inf, -inf, 2.999, -2.999, 0.5]
    return (torch.tensor(values).to(dtype),)


def constant_data(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """All equal: torch widens the data range by 1 on each side."""
    return (torch.full((2, 3), 1.5).to(dtype),)


def expert_ids(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """Sorted expert ids as float, as transformers' grouped experts count them on the CPU."""
    ids = torch.randint(0, 4, (10,), generator=torch.Generator().manual_seed(7)).sort().values
    return (ids.to(dtype),)


def hcase(name, fn, variants=HIST_VARIANTS, **kw):
    return Case(name, fn, dtypes=FLOATS, variants=variants, short=("3d", "transposed"), **kw)


HISTC_CASES = [
    hcase("histc_range", lambda x: torch.histc(x, bins=6, min=-3, max=3), extra_inputs=[edges]),
    hcase("histc_default", lambda x: torch.histc(x)),
    hcase("histc_data_range", lambda x: torch.histc(x, bins=7),
          variants={k: v for k, v in HIST_VARIANTS.items() if k != "empty"}, extra_inputs=[constant_data]),
    # min == max other than 0 also means the data's range.
    hcase("histc_equal_bounds", lambda x: torch.histc(x, bins=4, min=2, max=2), extra_inputs=[constant_data]),
    hcase("histc_float_bounds", lambda x: torch.histc(x, bins=3, min=-1.5, max=2.25), extra_inputs=[edges]),
    hcase("histc_expert_counts", lambda x: torch.histc(x, bins=4, min=0, max=3), variants={},
          extra_inputs=[expert_ids]),
]


@pytest.mark.parametrize("case", HISTC_CASES, ids=str)
def test_histc(case):
    run_case(case)


def offs(*ends: int):
    return lambda m: torch.tensor(ends, dtype=torch.int32)


def fallback(a, w, o):
    return torch.ops.transformers.grouped_mm_fallback(a, w, offs=o)


# input [S, K], weight [G, K, N], offs [G]
FALLBACK_VARIANTS = {
    "groups": (lambda m: m((6, 8)), lambda m: m((3, 8, 5)), offs(1, 4, 6)),
    "empty_group": (lambda m: m((6, 8)), lambda m: m((3, 8, 5)), offs(2, 2, 6)),
    "one_group": (lambda m: m((4, 8)), lambda m: m((1, 8, 5)), offs(4)),
    # Rows past offs[-1] belong to no expert: zero in the fallback's output.
    "tail_rows": (lambda m: m((7, 8)), lambda m: m((3, 8, 5)), offs(1, 3, 5)),
    "all_in_last": (lambda m: m((5, 8)), lambda m: m((4, 8, 5)), offs(0, 0, 0, 5)),
    # transformers passes the [G, N, K] parameter transposed, and the gathered rows of a view.
    "transposed_weight": (lambda m: m((6, 8)), lambda m: m((3, 5, 8)).transpose(-2, -1), offs(3, 3, 6)),
    "noncontiguous_input": (lambda m: m((8, 6)).t(), lambda m: m((2, 8, 4)), offs(2, 6)),
    # Ends past the rows are clamped, as Python slicing clamps them in the fallback.
    "ends_past_rows": (lambda m: m((6, 8)), lambda m: m((3, 8, 5)), offs(2, 9, 9)),
    # offs that does not ascend: each group slices from the previous end, and a later group's
    # product overwrites an earlier one's rows (torch's own kernel requires ascending offs).
    "not_ascending": (lambda m: m((6, 8)), lambda m: m((3, 8, 5)), offs(4, 2, 6)),
    # Fewer rows than experts (a decode step's top-k): each row gathers its expert's weight; the
    # variants above have at least as many rows as experts and run one product per expert.
    "few_rows": (lambda m: m((2, 8)), lambda m: m((4, 8, 5)), offs(0, 1, 1, 2)),
    "few_rows_transposed_weight": (
        lambda m: m((3, 8)), lambda m: m((5, 6, 8)).transpose(-2, -1), offs(1, 1, 2, 3, 3)
    ),
    "few_rows_not_ascending": (lambda m: m((3, 8)), lambda m: m((4, 8, 5)), offs(2, 1, 3, 3)),
    # Many experts (Qwen3-MoE has 128), most of them empty.
    "many_experts": (lambda m: m((20, 8)), lambda m: m((17, 8, 5)), offs(*range(1, 17), 20)),
}
FALLBACK_CASE = Case("grouped_mm_fallback", fallback, dtypes=FLOATS, variants=FALLBACK_VARIANTS, arity=3,
                     short=("groups", "transposed_weight", "tail_rows", "not_ascending", "few_rows",
                            "few_rows_not_ascending", "many_experts"),
                     domains=((-2, 2), (-2, 2)), tolerance_scale=2.0)


def test_grouped_mm_fallback():
    run_case(FALLBACK_CASE)


def fallback_of_linear_weights(a, w, o):
    """transformers' layout: each expert's weight [N, K], transposed inside the graph (an input is
    passed contiguous, so a transpose outside would not reach the backend)."""
    return fallback(a, w.transpose(-2, -1), o)


def fallback_of_slices(a, w, o):
    """Both operands slices: a's rows 24 apart from element 3, each expert's rows from element 2."""
    return fallback(a[:, 3:23], w[:, :, 2:22].transpose(-2, -1), o)


# f32 experts whose weights read K with unit stride run each expert of 2 to 64 rows as the GEMV
# kernel, and one row or more than 64 rows through BLAS. K = 20 and N = 13: no whole vectors.
EXPERT_GEMV_CASES = [
    Case("grouped_mm_fallback_linear_weights", fallback_of_linear_weights, dtypes=FLOATS, arity=3,
         variants={
             # groups of 1, 5, 0, 17 (two strips of rows) and 72 rows, then rows in no group
             "mixed_groups": (lambda m: m((97, 20)), lambda m: m((5, 13, 20)), offs(1, 6, 6, 23, 95)),
             "one_row_each": (lambda m: m((2, 20)), lambda m: m((4, 13, 20)), offs(0, 1, 1, 2)),
             "not_ascending": (lambda m: m((6, 20)), lambda m: m((3, 13, 20)), offs(4, 2, 6)),
             "ends_past_rows": (lambda m: m((6, 20)), lambda m: m((3, 13, 20)), offs(2, 9, 9)),
         },
         short=("mixed_groups", "one_row_each"), domains=((-2, 2), (-2, 2)), tolerance_scale=2.0),
    Case("grouped_mm_fallback_slices", fallback_of_slices, dtypes=FLOATS, arity=3,
         variants={"slices": (lambda m: m((30, 24)), lambda m: m((3, 13, 24)), offs(4, 4, 30))},
         short=("slices",), domains=((-2, 2), (-2, 2)), tolerance_scale=2.0),
]


@pytest.mark.parametrize("case", EXPERT_GEMV_CASES, ids=str)
def test_grouped_mm_fallback_expert_gemv(case):
    run_case(case)


def test_grouped_mm_fallback_one_compile_for_every_routing():
    """offs is a runtime tensor: new routings reuse the compile and give eager's result."""
    backend = CountingBackend()
    compiled = torch.compile(fallback, backend=backend, fullgraph=True)
    gen = torch.Generator().manual_seed(0)
    a, w = torch.randn(6, 8, generator=gen), torch.randn(4, 8, 5, generator=gen)
    results = []
    for ends in ([1, 4, 6, 6], [0, 0, 3, 6], [6, 6, 6, 6], [2, 3, 4, 5]):
        o = torch.tensor(ends, dtype=torch.int32)
        results.append(compiled(a, w, o))
        assert_close(results[-1], fallback(a, w, o))
    assert not torch.allclose(results[0], results[1])
    assert len(backend.compiled) == 1


def test_grouped_rows_run_one_blas_call_per_expert(tmp_path):
    """At least as many rows as experts (a prefill): one grouped BLAS step reads each routed
    expert's weights in place; no kernel gathers a weight copy per row."""
    compiled = torch.compile(fallback, backend="luminal", options={"debug_dir": str(tmp_path), "fallback": "error"})
    a, w = torch.randn(6, 8), torch.randn(3, 5, 8).transpose(-2, -1)
    o = torch.tensor([2, 2, 6], dtype=torch.int32)
    assert_close(compiled(a, w, o), fallback(a, w, o))
    steps = [line for line in (tmp_path / "cpu_stats.txt").read_text().splitlines()
             if line.startswith(("kernel", "gemm", "grouped", "aten"))]
    assert sum(line.startswith("grouped") for line in steps) == 1, steps
    assert not any(line.startswith(("gemm", "aten")) or "gather" in line for line in steps), steps


@pytest.mark.parametrize("rows,weight_n_k", [(2, False), (4, False), (4, True)],
                         ids=["gathered_per_row", "grouped_per_expert", "expert_gemv"])
def test_grouped_mm_reads_only_routed_experts(rows, weight_n_k):
    """A NaN in an expert no row is routed to never reaches the output, in every lowering: a row
    gathers its own expert's weight, or each expert with rows multiplies only its own, through
    BLAS or the expert GEMV (a dense product masked afterwards would spread it: NaN * 0 is NaN)."""
    fn = fallback_of_linear_weights if weight_n_k else fallback
    compiled = torch.compile(fn, backend=CountingBackend(), fullgraph=True)
    a = torch.randn(rows, 8)
    w = torch.randn(3, 5, 8) if weight_n_k else torch.randn(3, 8, 5)
    w[1] = float("nan")
    o = torch.tensor([rows // 2, rows // 2, rows], dtype=torch.int32)
    out = compiled(a, w, o)
    assert not out.isnan().any()
    assert_close(out, fn(a, w, o))


def test_few_rows_per_expert_run_the_expert_gemv(tmp_path):
    """An f32 prefill's few rows per expert (weights [G, N, K] as transformers stores them) run
    as one GEMV kernel per expert: sgemm would pack each expert's whole weight first."""
    compiled = torch.compile(fallback_of_linear_weights, backend="luminal",
                             options={"debug_dir": str(tmp_path), "fallback": "error"})
    a, w = torch.randn(16, 32), torch.randn(4, 24, 32)
    o = torch.tensor([3, 8, 8, 16], dtype=torch.int32)
    assert_close(compiled(a, w, o), fallback_of_linear_weights(a, w, o))
    steps = [line for line in (tmp_path / "cpu_stats.txt").read_text().splitlines() if line.startswith("grouped")]
    assert len(steps) == 1 and "the GEMV lm_" in steps[0], steps


def test_bf16_experts_multiply_bf16_pairs_where_the_cpu_has_them():
    """On a CPU with AVX512-BF16 (vdpbf16ps, or AMX tiles where it has them), each bf16 expert of
    1 to 128 rows (64 on AMX tiles) is the bf16-pair GEMV, as the prompt's bf16 Linears are; an
    expert of more rows goes to ATen's GEMM. A prefill
    that went back and forth between luminal's pool and oneDNN's threads paid for each one's
    spinning on the other's cores (Qwen3-MoE's 32-token forward 13.4 ms against 10.4). Eager's
    values either way (the expert GEMV's correctness in every dtype: test_grouped_mm_fallback_expert_gemv)."""
    from test_linalg import cpu_multiplies_bf16_pairs

    pairs = cpu_multiplies_bf16_pairs()
    linear = torch.nn.Linear(64, 48, bias=False).to(torch.bfloat16)
    experts = torch.randn(4, 40, 48, dtype=torch.bfloat16)

    def prompt(x, o):
        return fallback_of_linear_weights(linear(x), experts, o)

    def only_experts(x, o):
        return fallback_of_linear_weights(x, experts, o)

    # Experts of 8, 0, 12 and 12 rows after a 32-row Linear; of 1, 8, 140 and 21 rows alone.
    for fn, rows, ends, aten_calls in ((prompt, 32, [8, 8, 20, 32], 0), (only_experts, 170, [1, 9, 149, 170], 1)):
        backend = CountingBackend()
        x = torch.randn(rows, 64 if fn is prompt else 48, dtype=torch.bfloat16)
        o = torch.tensor(ends, dtype=torch.int32)
        with torch.no_grad():
            expected = fn(x, o)
            actual = torch.compile(fn, backend=backend)(x, o)
        assert_close(actual, expected, dtype=torch.bfloat16)
        if pairs:
            assert backend.compiled[0].stats["aten_matmuls_last_run"] == aten_calls, fn.__name__


def grouped_mm(a, b, o=None):
    return torch._grouped_mm(a, b, offs=o)


# torch's CPU _grouped_mm takes bf16 only (its meta kernel checks) with rows a multiple of 16
# bytes; it leaves rows past offs[-1] unwritten, so these offs cover every row.
GROUPED_MM_VARIANTS = {
    "rows": (lambda m: m((6, 16)), lambda m: m((3, 16, 8)), offs(2, 2, 6)),
    "rows_transposed_weight": (lambda m: m((6, 16)), lambda m: m((3, 8, 16)).transpose(-2, -1),
                               offs(1, 5, 6)),
    "k_groups": (lambda m: m((8, 16)), lambda m: m((16, 8)), offs(8, 8, 16)),
    "column_groups": (lambda m: m((3, 4, 16)), lambda m: m((16, 8)), offs(3, 3, 8)),
}


def test_grouped_mm():
    case = Case("_grouped_mm", grouped_mm, dtypes=(bf16,), variants=GROUPED_MM_VARIANTS, arity=3,
                short=list(GROUPED_MM_VARIANTS), domains=((-2, 2), (-2, 2)))
    run_case(case)


def test_grouped_mm_batched():
    """Two 3-d operands and no offs: a batched matmul."""
    variants = {
        "batched": (lambda m: m((3, 4, 16)), lambda m: m((3, 16, 8))),
        "transposed": (lambda m: m((3, 4, 16)), lambda m: m((3, 8, 16)).transpose(-2, -1)),
    }
    case = Case("_grouped_mm_batched", grouped_mm, dtypes=(bf16,), arity=2, domains=((-2, 2), (-2, 2)),
                variants=variants, short=list(variants))
    run_case(case)


def test_moe_routing_block():
    """transformers' grouped experts forward in miniature: sort the routed expert ids, count them
    with histc, offsets by cumsum, grouped_mm, then undo the permutation; every routing one compile."""
    backend = CountingBackend()

    def experts(hidden, logits, weight):
        top_values, top_ids = torch.topk(torch.softmax(logits, -1, dtype=f32), 2, dim=-1)
        ids = top_ids.reshape(-1)
        ids_sorted, perm = torch.sort(ids)
        rows = hidden[perm // 2]
        counts = torch.histc(ids_sorted.float(), bins=weight.shape[0], min=0, max=weight.shape[0] - 1)
        out = fallback(rows, weight, torch.cumsum(counts, 0, dtype=torch.int32))
        out = out * top_values.reshape(-1)[perm].unsqueeze(-1)
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(perm.numel())
        return out[inverse].view(hidden.shape[0], 2, -1).sum(1)

    compiled = torch.compile(experts, backend=backend, fullgraph=True)
    gen = torch.Generator().manual_seed(3)
    weight = torch.randn(4, 8, 6, generator=gen)
    for _ in range(3):
        hidden, logits = torch.randn(5, 8, generator=gen), torch.randn(5, 4, generator=gen)
        assert_close(compiled(hidden, logits, weight), experts(hidden, logits, weight))
    assert len(backend.compiled) == 1
