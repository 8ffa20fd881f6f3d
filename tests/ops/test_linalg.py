"""Matrix products (mm, bmm, addmm, matmul forms, linear) against eager in the dtypes torch's CPU
matmul supports."""

from __future__ import annotations

import pytest
import torch
from torch._higher_order_ops.out_dtype import out_dtype

import luminal
from op_harness import FLOATS, INTS, Case, run_case

DTYPES = FLOATS + INTS
V = {
    "2d": (lambda m: m((3, 5)), lambda m: m((5, 4))),
    "transposed": (lambda m: m((5, 3)).t(), lambda m: m((4, 5)).t()),
}
VB = {
    "3d": (lambda m: m((2, 3, 5)), lambda m: m((2, 5, 4))),
    "transposed": (lambda m: m((2, 5, 3)).transpose(1, 2), lambda m: m((2, 4, 5)).transpose(1, 2)),
}
SMALL = ((-3, 3), (-3, 3))
# One row through a weight wide and deep enough for the GEMV kernels' vector paths and their
# tails (K = 37: four 8-row steps and 5 rows; N = 45: two 16-column blocks and 13), the weight
# read [K, N] (x @ W, GPT-2's Conv1D), transposed ([N, K], nn.Linear's) and as a column slice of
# a wider one (its rows 64 apart).
V_WIDE = {
    "2d": (lambda m: m((3, 37)), lambda m: m((37, 45))),
    "transposed": (lambda m: m((37, 3)).t(), lambda m: m((45, 37)).t()),
    "sliced": (lambda m: m((3, 37)), lambda m: m((37, 64))[:, 5:50]),
}
VB_WIDE = {"3d": (lambda m: m((2, 3, 37)), lambda m: m((2, 37, 45)))}


def lcase(name, fn, variants=V, **kw):
    return Case(name, fn, dtypes=DTYPES, arity=2, variants=variants, short=("transposed",), domains=SMALL,
                tolerance_scale=5, **kw)


CASES = [
    lcase("mm", torch.mm),
    lcase("matmul_vec", lambda a, b: (a @ b[:, 0], a[0] @ b, a[0] @ b[:, 0])),
    # One row (a decode step's linear layer): BLAS runs these as GEMV, the row read with a stride
    # where a is transposed.
    lcase("mm_one_row", lambda a, b: (a[:1] @ b, a[2:3] @ b)),
    lcase("mm_one_row_wide", lambda a, b: (a[:1] @ b, a[2:3] @ b), variants=V_WIDE),
    # A few rows (a short prompt): f16/bf16 through an [N, K] weight run as the GEMV a row at a time.
    lcase("mm_few_rows_wide", torch.mm, variants=V_WIDE),
    lcase("bmm", torch.bmm, variants=VB),
    lcase("bmm_one_row_wide", lambda a, b: torch.bmm(a[:, 1:2], b), variants=VB_WIDE),
    lcase("bmm_one_row", lambda a, b: torch.bmm(a[:, 1:2], b), variants=VB),
    lcase("matmul_broadcast", lambda a, b: a @ b[0], variants=VB),
    lcase("addmm", lambda a, b: torch.addmm(b[0, 0], a, b)),
    lcase("addmm_beta_alpha", lambda a, b: torch.addmm(b[0], a, b, beta=2, alpha=3)),
    lcase("linear", lambda a, b: torch.nn.functional.linear(a, b.t(), b[0]), ),
    lcase("einsum", lambda a, b: torch.einsum("ij,jk->ik", a, b)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_linalg(case):
    run_case(case)


@pytest.mark.parametrize("rows", [5, 16, 40, 48, 64])
def test_few_row_f32_linear_is_the_same_in_both_instruction_sets(rows):
    """A prompt's f32 Linear (at most 64 rows) is the strip GEMV, whose tiles are AVX-512 where the
    CPU has it (three whole strips, 48 rows, one tile of three); forced to AVX2 it gives eager's
    values and the same bits. Non-contiguous rows."""
    linear = torch.nn.Linear(300, 70)
    x = torch.randn(rows, 310)[:, 5:305]
    results = {}
    with torch.no_grad():
        expected = linear(x)
        for isa in ("native", "avx2"):
            torch._dynamo.reset()  # a fresh compile per option
            results[isa] = torch.compile(linear, backend="luminal", options={"cpu_isa": isa})(x)
    torch.testing.assert_close(results["native"], expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(results["native"], results["avx2"])


@pytest.mark.parametrize("rows", [2, 13, 33, 64, 65])
def test_few_row_f32_conv1d_reads_its_weight_in_place_on_both_isas(rows, tmp_path):
    """GPT-2's Conv1D (addmm of a [K, N] weight) in f32 at a prompt's rows, and x @ W through a
    column slice of a wider weight (its rows 80 apart): up to 64 rows are luminal's column kernel,
    the weight read in place (sgemm would pack all of it first), past it BLAS. Eager's values,
    and the same bits with the kernels forced to AVX2: 70 columns are two AVX-512 blocks of 32
    and a tail of 6, four AVX2 blocks of 16 and the same tail; the depth 301 is odd and the rows
    are not contiguous."""
    from transformers.pytorch_utils import Conv1D

    torch.manual_seed(0)
    conv = Conv1D(70, 301)
    # A weight at a Linear's scale (sums of unit variance): with unit-normal weights the 301-term
    # sums reach ~50, and the order of f32 additions alone moves them by 3-6e-5 (eager's sgemm and
    # this kernel sum in different orders), past the 1e-5 that this test holds them to.
    wide = torch.randn(301, 80) / 301**0.5

    def model(x):
        return conv(x), x @ wide[:, 5:75]

    x = torch.randn(1, rows, 310)[:, :, 5:306]
    results = {}
    with torch.no_grad():
        expected = model(x)
        for isa in ("native", "avx2"):
            torch._dynamo.reset()  # a fresh compile per option
            debug_dir = tmp_path / isa
            compiled = torch.compile(model, backend="luminal", options={"cpu_isa": isa, "debug_dir": str(debug_dir)})
            results[isa] = compiled(x)
            stats = (debug_dir / "cpu_stats.txt").read_text()
            assert stats.count("weight [K, N] read in place") == (2 if rows <= 64 else 0), stats
    torch.testing.assert_close(results["native"], expected, atol=1e-5, rtol=1e-5)
    for native, avx2 in zip(results["native"], results["avx2"]):
        assert torch.equal(native, avx2)


def f32_strip_rows(depth: int, cpu_isa: str = "native") -> int:
    """The most rows of an f32 Linear of `depth` inputs that luminal's strip GEMV takes here (64;
    on a Zen 5 256, or 1,024 beside OpenBLAS's AVX2 kernels; passes::GemvRows::f32_rows)."""
    limits = luminal._C._cpu_gemv_rows(cpu_isa)
    if limits["f32_values"] == 0:
        return limits["f32"]
    return max(1, min(limits["f32"], limits["f32_values"] // depth))


def test_dynamic_rows_f32_linear_runs_the_strip_gemv_for_few_rows(tmp_path):
    """With dynamic shapes (torch.compile's automatic dynamic after a second prompt length) the
    rows are a symbol: one program serves every length, the strip GEMV when a call has at most 64
    rows (more on a Zen 5), BLAS beyond. Each call matches eager."""
    linear = torch.nn.Linear(300, 70)
    limit = f32_strip_rows(300)
    # The first length compiles a static graph, the second a dynamic one serving the rest.
    compiled = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})
    with torch.no_grad():
        for rows in sorted({3, 17, 64, 65, 200, limit, limit + 1}):
            x = torch.randn(rows, 300)
            torch.testing.assert_close(compiled(x), linear(x), atol=1e-5, rtol=1e-5)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    assert "or the GEMV" in stats and f"for up to {limit} rows" in stats, stats


@pytest.mark.parametrize(
    "rows,depth", [(65, 300), (200, 1000), (256, 70), (257, 70), (1024, 70), (1025, 70), (300, 8192), (600, 8192)],
    ids=str,
)
def test_long_f32_prompt_takes_the_strips_where_they_outrun_blas(rows, depth, tmp_path):
    """An f32 prompt's Linear of more than 64 rows: luminal's strip GEMV where its strips outrun
    BLAS (a Zen 5: up to 256 rows, 1,024 beside OpenBLAS's AVX2 kernels, and rows x depth within
    4M values; the strips in panels past L2), BLAS elsewhere; eager's values either way. Rows a
    view of a wider input; 45 outputs (seven blocks of six in one panel, then three rows one at a
    time)."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(depth, 45)
    x = torch.randn(rows, depth + 9)[:, 4 : 4 + depth]
    with torch.no_grad():
        compiled = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})
        # A sum of `depth` products of unit values: f32 orders differ by ~1e-7 * sqrt(depth) of it.
        torch.testing.assert_close(compiled(x), linear(x), atol=3e-6 * depth**0.5, rtol=1e-5)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    strips = rows <= f32_strip_rows(depth)
    assert ("matmul (BLAS)" in stats) != strips, stats


def cpu_has_bf16_pairs_without_amx() -> bool:
    """Whether luminal's kernels multiply bf16 x bf16 prompts as bf16 pairs here with vdpbf16ps
    (AVX512-BF16, no AMX: the cpu runtime's kernels_have_bf16_pairs_without_amx)."""
    cpu = torch._C._cpu._get_cpu_capability()
    return bool(cpu.get("avx512_bf16")) and not cpu.get("amx_bf16")


def cpu_has_amx_bf16() -> bool:
    """Whether luminal's kernels multiply a prompt's bf16 Linears on AMX tiles here (the cpu
    runtime's kernels_have_amx_bf16)."""
    cpu = torch._C._cpu._get_cpu_capability()
    return bool(cpu.get("avx512_bf16")) and bool(cpu.get("amx_bf16"))


def cpu_multiplies_bf16_pairs() -> bool:
    """Whether luminal's kernels multiply a prompt's bf16 Linears ([N, K] weights) as bf16 pairs
    here, with vdpbf16ps or on AMX tiles (kernels_multiply_bf16_pairs)."""
    return cpu_has_bf16_pairs_without_amx() or cpu_has_amx_bf16()


def bf16_pair_rows() -> int:
    """The most rows of a bf16 prompt's Linear luminal's kernels multiply as bf16 pairs here:
    codegen::kAmxBf16PairGemvRows on AMX tiles, else kBf16PairGemvRows (vdpbf16ps)."""
    return luminal._C._cpu_gemv_rows()["bf16_pairs"]


def aten_multiplies_natively(feature: str) -> bool:
    """Whether ATen's oneDNN GEMM multiplies `feature` ("bf16" or "fp16") in its dtype here
    (AVX-512 or AMX dot products), so that the cpu runtime sends a half GEMM there instead of
    widening it to f32 for BLAS."""
    cpu = torch._C._cpu._get_cpu_capability()
    return bool(cpu.get(f"avx512_{feature}") or cpu.get(f"amx_{feature}"))


@pytest.mark.parametrize("rows", [2, 5, 8, 12, 16, 17, 33, 40, 48, 64, 65, 112, 128, 129])
def test_prompt_bf16_linear_multiplies_bf16_pairs_where_the_cpu_has_them(rows, tmp_path):
    """A prompt's bf16 Linear of at most 128 rows on a CPU with AVX512-BF16 (64 on AMX tiles) is
    the strip GEMV of bf16 pairs (vdpbf16ps, or AMX tiles where the CPU has them), ahead of
    oneDNN's GEMM, which keeps more rows; elsewhere the row GEMV or a GEMM. Either way eager's values, from
    non-contiguous rows: whole strips of 16, a partial one, a last one of at most 8 (two pairs a
    lane without AMX), and a depth of 300 (nine runs of 32 transposed in registers and a tail; on
    AMX, nine whole tiles of depth and a zero-padded one); 70 weight rows (on AMX two blocks of 32,
    six rows one at a time)."""
    pairs = cpu_multiplies_bf16_pairs()
    linear = torch.nn.Linear(300, 70).to(torch.bfloat16)
    x = torch.randn(rows, 310, dtype=torch.bfloat16)[:, 5:305]
    with torch.no_grad():
        expected = linear(x)
        actual = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})(x)
    torch.testing.assert_close(actual, expected, atol=2e-2, rtol=2e-2)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    if pairs:
        assert ("gemv per row" in stats and "ATen" not in stats) == (rows <= bf16_pair_rows()), stats
        assert ("on AMX tiles" in stats) == (cpu_has_amx_bf16() and rows <= bf16_pair_rows()), stats


@pytest.mark.parametrize("rows,depth,out_features", [(2, 31, 33), (16, 32, 32), (17, 64, 95), (33, 1000, 64),
                                                     (48, 33, 100), (64, 4096, 40)], ids=str)
def test_prompt_bf16_linear_on_amx_tiles(rows, depth, out_features, tmp_path):
    """On a CPU with AMX-BF16, a prompt's bf16 Linear multiplies on AMX tiles with the weight read
    in place: depths below, at and past a tile's 32 (a zero-padded copy of the rows' tails, never
    a read past the weight's end: the weight is a view ending where its storage does), one to
    four strips of `a` (an odd count: a last strip alone), blocks of 32 weight rows and the rest
    one at a time. Eager's values; an inf in the weight gives eager's inf and NaN in its column
    only."""
    if not cpu_has_amx_bf16():
        pytest.skip("the CPU has no AMX-BF16")
    linear = torch.nn.Linear(depth, out_features, bias=False).to(torch.bfloat16)
    with torch.no_grad():
        linear.weight[out_features // 2, depth - 1] = float("inf")
    x = torch.randn(rows, depth + 3, dtype=torch.bfloat16)[:, 3:]
    with torch.no_grad():
        expected = linear(x)
        actual = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})(x)
    torch.testing.assert_close(actual, expected, atol=2e-2, rtol=2e-2, equal_nan=True)
    assert "on AMX tiles" in (tmp_path / "cpu_stats.txt").read_text()


@pytest.mark.parametrize("dtype,rows", [(torch.float32, 5), (torch.float32, 40), (torch.bfloat16, 2),
                                        (torch.bfloat16, 33)], ids=str)
def test_a_prompt_linears_bias_is_added_by_its_strip_gemv(dtype, rows, tmp_path):
    """A prompt's Linear with a bias (addmm) whose product is the strip GEMV adds the bias to each
    f32 sum before its store: no Add kernel after it (BERT's 32-token forward ran 38 of them) and,
    in bf16, one rounding of sum + bias, as eager's addmm. bf16 takes the strips only where the CPU
    has bf16 pairs. Eager's values from non-contiguous rows; the product is not kept."""
    strips = dtype == torch.float32 or cpu_multiplies_bf16_pairs()
    linear = torch.nn.Linear(300, 70).to(dtype)
    x = torch.randn(rows, 310, dtype=dtype)[:, 5:305]
    with torch.no_grad():
        expected = linear(x)
        actual = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})(x)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(actual, expected, atol=tolerance, rtol=tolerance)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    assert ("+ bias from aten::addmm" in stats) == strips, stats
    if strips:
        assert "pointwise kernel: Add" not in stats, stats


@pytest.mark.parametrize("rows", [2, 13, 33, 64, 65])
def test_prompt_bf16_conv1d_multiplies_bf16_pairs_where_the_cpu_has_them(rows, tmp_path):
    """GPT-2's Conv1D (addmm of a [K, N] weight) in bf16 at a prompt's rows: on a CPU with
    AVX512-BF16 and no AMX, up to 64 rows are luminal's bf16-pair kernel for that layout (no ATen
    GEMM, whose OpenMP threads fought our pool's for the cores), past it oneDNN's GEMM. Eager's
    values either way, from non-contiguous rows, with 70 columns (two blocks of 32 and a tail) and
    an odd depth of 301."""
    from transformers.pytorch_utils import Conv1D

    pairs = cpu_has_bf16_pairs_without_amx()
    conv = Conv1D(70, 301).to(torch.bfloat16)
    x = torch.randn(1, rows, 310, dtype=torch.bfloat16)[:, :, 5:306]
    compiled = torch.compile(conv, backend="luminal", options={"debug_dir": str(tmp_path)})
    with torch.no_grad():
        expected = conv(x)
        actual = compiled(x)
    torch.testing.assert_close(actual, expected, atol=2e-2, rtol=2e-2)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    on_pairs = pairs and rows <= 64
    assert ("bf16 pairs" in stats) == on_pairs, stats
    # The rest in oneDNN's GEMM where ATen multiplies bf16 natively (AVX512-BF16 or AMX; with AMX,
    # every row count), else widened to f32 for BLAS.
    assert ("(ATen, bf16)" in stats) == (not on_pairs and aten_multiplies_natively("bf16")), stats


def test_dynamic_bf16_prompt_linear_multiplies_bf16_pairs_for_a_few_rows(tmp_path):
    """A dynamic-shape prefill's bf16 Linear (a symbolic prompt length: gemma3's sliding-window
    cache compiles with automatic dynamic shapes) takes the bf16 pairs for a call of at most 128
    rows (64 on AMX tiles) where the CPU has them, and ATen's GEMM for more: one compile for every length (but 1,
    which dynamo specializes); a CPU with neither widens every length to f32 for BLAS. A last strip
    of at most 8, a partial strip, the limit and one past, from non-contiguous rows."""
    from conftest import CountingBackend

    pairs = cpu_multiplies_bf16_pairs()
    native = aten_multiplies_natively("bf16")
    linear = torch.nn.Linear(300, 70).to(torch.bfloat16)
    backend = CountingBackend({"debug_dir": str(tmp_path)})
    compiled = torch.compile(linear, backend=backend, dynamic=True)
    for rows in [2, 7, 17, 64, 65, 100, 128, 129]:
        x = torch.randn(rows, 310, dtype=torch.bfloat16)[:, 5:305]
        with torch.no_grad():
            expected = linear(x)
            actual = compiled(x)
        torch.testing.assert_close(actual, expected, atol=2e-2, rtol=2e-2)
        assert len(backend.compiled) == 1, "one compile serves every prompt length"
        on_pairs = pairs and rows <= bf16_pair_rows()
        assert (backend.compiled[0].stats["aten_matmuls_last_run"] > 0) == (native and not on_pairs), rows
    stats = (tmp_path / "cpu_stats.txt").read_text()
    # The bf16 matmul with its bf16-pair GEMV; without pairs the widened f32 one has the f32 GEMV.
    assert ("matmul (ATen, or the GEMV" in stats) == pairs, stats


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_gemm_stays_half_where_the_cpu_has_half_dot_products(tmp_path, dtype):
    """On a CPU with bf16 (f16) dot products, ATen's oneDNN GEMM is several times faster than
    widening to f32 for BLAS, so a prefill's half GEMM runs there in its dtype; elsewhere it is
    widened. Either way it matches eager."""
    native = aten_multiplies_natively("bf16" if dtype == torch.bfloat16 else "fp16")
    linear = torch.nn.Linear(64, 48).to(dtype)
    # More rows than the cpu runtime's GEMVs take (half: 8, bf16 pairs: 128, widened to f32: 64
    # or, where the f32 strips outrun BLAS, 1,024).
    x = torch.randn(max(200, f32_strip_rows(64) + 1), 64, dtype=dtype)
    compiled = torch.compile(linear, backend="luminal", options={"debug_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), linear(x), atol=2e-2, rtol=2e-2)
    gemms = [line for line in (tmp_path / "cpu_stats.txt").read_text().splitlines() if line.startswith("gemm")]
    name = "bf16" if dtype == torch.bfloat16 else "f16"
    assert gemms and all((f"(ATen, {name})" in line) == native for line in gemms), (native, gemms)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_gemv_reads_a_k_by_n_weight_in_place(tmp_path, dtype):
    """x @ W with W [K, N] (GPT-2's Conv1D) in bf16/f16: one GEMV kernel streams the weight in its
    dtype; widening it to f32 for BLAS would copy the whole weight on every decode step."""
    x = torch.randn(1, 300, dtype=dtype)
    weight = torch.randn(300, 1000, dtype=dtype)
    compiled = torch.compile(torch.mm, backend="luminal", options={"debug_dir": str(tmp_path)})
    torch.testing.assert_close(compiled(x, weight), torch.mm(x, weight), atol=2e-2, rtol=2e-2)
    stats = (tmp_path / "cpu_stats.txt").read_text()
    assert "generated kernel launches 1\n" in stats and "weight [K, N]" in stats, stats


class Int8Linear(torch.nn.Module):
    """torchao's dynamic-activation Linear at its core: int8 activations times the int8 weight,
    a buffer [N, K] read transposed."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight)

    def forward(self, x):
        return torch._int_mm(x, self.weight.t())


@pytest.mark.parametrize("m,k,n", [(1, 37, 13), (1, 4096, 24), (5, 48, 20), (17, 64, 33)])
@pytest.mark.parametrize("operand", ["input", "weight"])
@pytest.mark.parametrize("a_dtype", [torch.int8, torch.uint8])
def test_int_mm_is_exact(m, k, n, operand, a_dtype, tmp_path):
    """torch._int_mm (torchao's dynamic int8 activations): int8 x int8 summed exactly in i32, over
    the whole int8 range and a depth whose sums need more than f32's 24 bits. One row times a
    weight is the decode GEMV that reads the int8 operands themselves. uint8 activations are
    torchao's form on CPUs with AVX512-VNNI and no AMX."""
    generator = torch.Generator().manual_seed(m * k + n)
    low = -128 if a_dtype == torch.int8 else 0
    a = torch.randint(low, low + 256, (m, k), dtype=a_dtype, generator=generator)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=generator)
    options = {"debug_dir": str(tmp_path)}
    if operand == "weight":
        model = Int8Linear(w)
        expected, actual = model(a), torch.compile(model, backend="luminal", options=options)(a)
    else:
        b = w.t()  # non-contiguous
        expected, actual = torch._int_mm(a, b), torch.compile(torch._int_mm, backend="luminal", options=options)(a, b)
    assert actual.dtype == torch.int32
    assert torch.equal(actual, expected)
    if m == 1 and operand == "weight":
        assert "gemv" in (tmp_path / "cpu_stats.txt").read_text()


class OutDtypeInt8Linear(Int8Linear):
    """torchao's dynamic-activation Linear on CUDA (torchao.kernel.safe_int_mm): the product as
    torch.ops.higher_order.out_dtype over aten.mm instead of _int_mm."""

    def forward(self, x):
        return out_dtype(torch.ops.aten.mm.default, torch.int32, x, self.weight.t())


@pytest.mark.parametrize("m,k,n", [(1, 4096, 24), (5, 48, 20)])
@pytest.mark.parametrize("dtype", [torch.int8, torch.float32])
def test_out_dtype_over_mm_is_exact(m, k, n, dtype, tmp_path):
    """out_dtype(mm, int32, a, b) is torch's fallback: the operands cast to the promotion of theirs
    and the output's dtype, multiplied, cast to int32. int8 operands sum exactly in i32 (and a
    decode row is the int8 GEMV); f32 ones (torchao's CPU form) multiply in f32 and truncate."""
    generator = torch.Generator().manual_seed(m * k + n)
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=generator).to(dtype)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=generator).to(dtype)
    if dtype == torch.float32:
        a = a / 8  # fractions, so the cast to int32 truncates
    model = OutDtypeInt8Linear(w)
    actual = torch.compile(model, backend="luminal", options={"debug_dir": str(tmp_path)})(a)
    expected = model(a)
    assert actual.dtype == torch.int32
    assert torch.equal(actual, expected)
    if m == 1 and dtype == torch.int8:
        assert "gemv" in (tmp_path / "cpu_stats.txt").read_text()


def test_out_dtype_over_another_op_names_it():
    def scaled(x, y):
        return out_dtype(torch.ops.aten.mul.Tensor, torch.int32, x, y)

    x = torch.ones(3, 4, dtype=torch.int8)
    with pytest.raises(luminal.UnsupportedError, match=r"out_dtype over aten::mul.Tensor"):
        torch.compile(scaled, backend="luminal")(x, x)
