"""The explicit 16-lane loops of the cpu runtime (codegen/cpp/emit.cpp, lane loops) give the bits
its scalar loops give: bf16 elementwise and row kernels built for this CPU (lanes on
vcvtneps2bf16, AVX512-BF16) against the same kernels built with cpu_isa="avx2" (scalar loops
only), on values that probe the rounding: ties, denormals (which vcvtneps2bf16 flushes to zero),
NaN payloads, infinities, overflow to infinity. Rows of 1,000 elements: 62 whole vectors and a
scalar tail of 8 (where an erf makes the loop take four vectors at once, 15 blocks of them and a
tail of 40)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.skipif(not torch._C._cpu._get_cpu_capability().get("avx512_bf16"),
                                reason="needs a CPU with AVX512-BF16 (where the lane loops are built)")


def rounding_probes(rows: int = 37, cols: int = 1000) -> torch.Tensor:
    """f32 values whose bf16 rounding is delicate, spread over a [rows, cols] tensor."""
    g = torch.Generator().manual_seed(0)
    bits = torch.randint(0, 2**32, (rows * cols,), generator=g, dtype=torch.int64)
    # Low halves at the tie (0x8000) and either side of it, on random upper halves.
    low = torch.tensor([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF])[torch.arange(rows * cols) % 5]
    bits = (bits & 0xFFFF0000) | low
    # A third denormal (exponent bits zero), so that most vectors hold one.
    denormal = torch.arange(rows * cols) % 3 == 0
    bits = torch.where(denormal, bits & 0x807FFFFF, bits)
    values = (bits - (bits >= 2**31).long() * 2**32).to(torch.int32).view(torch.float32)
    special = torch.tensor([0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FBFFFFF, 0x7F800000, 0xFF800000, 0x00000000,
                            0x80000000, 0x7F7FFFFF, 0x7F7F8000, 0x00008000, 0x80018000, 0x3F808000, 0x3F818000],
                           dtype=torch.int64)
    special = (special - (special >= 2**31).long() * 2**32).to(torch.int32).view(torch.float32)
    values[: special.numel()] = special
    # Whole vectors free of denormals too, so that vcvtneps2bf16 itself runs.
    values[200:600] = torch.randn(400, generator=g) * 1000
    return values.view(rows, cols)


def compiled_both_ways(fn, *args) -> tuple[torch.Tensor, torch.Tensor]:
    outs = []
    for isa in ("avx2", "native"):
        torch._dynamo.reset()
        outs.append(torch.compile(fn, backend="luminal", options={"cpu_isa": isa})(*args))
    torch._dynamo.reset()
    return outs[0], outs[1]


def assert_same_bits(scalar: torch.Tensor, lanes: torch.Tensor, any_nan: bool = False) -> None:
    """Bitwise equal; with `any_nan`, a NaN matches any NaN (an arithmetic op's NaN result has no
    defined sign or payload, and GCC orders a vector's operands its own way)."""
    assert scalar.dtype == lanes.dtype and scalar.shape == lanes.shape
    as_int = {torch.bfloat16: torch.int16, torch.float32: torch.int32}[scalar.dtype]
    differ = scalar.view(as_int) != lanes.view(as_int)
    if any_nan:
        differ &= ~(scalar.isnan() & lanes.isnan())
    where = differ.nonzero()[:5].tolist()
    assert not where, f"{int(differ.sum())} elements differ, first at {where}: " + ", ".join(
        f"{scalar[tuple(i)].item()!r} vs {lanes[tuple(i)].item()!r}" for i in where)


def test_rounding_f32_to_bf16_keeps_every_bit():
    x = rounding_probes()
    scalar, lanes = compiled_both_ways(lambda a: a.to(torch.bfloat16), x)
    assert_same_bits(scalar, lanes)
    # And eager's rounding, NaNs aside: ATen's vectorised conversion makes every NaN 0xFFFF, where
    # c10::BFloat16 (and luminal, the reference runtime included) keeps the sign and top payload.
    eager = x.to(torch.bfloat16)
    assert_same_bits(torch.where(x.isnan(), eager, lanes), eager)


def test_products_rounded_twice():
    # bf16 in, an f32 product rounded to bf16 (lm_rbf in the loop), times 3, rounded by the store.
    x = rounding_probes()
    y = x.flip(0)
    scalar, lanes = compiled_both_ways(lambda a, b: (a * b).to(torch.bfloat16) * 3, x, y)
    assert_same_bits(scalar, lanes, any_nan=True)


def test_bf16_copies_keep_nan_payloads():
    # A bf16 value stored as it was loaded (a sum with -0.0 would round): its bits, signalling
    # NaNs included, through lm_store_lanes_bf16_bits.
    x = rounding_probes().to(torch.bfloat16)
    x.view(torch.int16)[0, :4] = torch.tensor([0x7F81, -0x7F, 0x7FBF, -0x41], dtype=torch.int16)
    scalar, lanes = compiled_both_ways(lambda a: a.float().to(torch.bfloat16), x)
    assert_same_bits(scalar, lanes)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_sigmoid_and_silu(dtype):
    x = rounding_probes() * 100  # past the exp's clamps on both sides
    x = x.to(dtype)
    for fn in (torch.sigmoid, F.silu):
        scalar, lanes = compiled_both_ways(fn, x)
        assert_same_bits(scalar, lanes, any_nan=True)


def test_rms_norm_final_pass():
    # Llama's RMSNorm in bf16: the row's scale is per-row (splat in the lane loop), the
    # normalised value rounded to bf16, times the weight, rounded again by the store.
    x = rounding_probes().to(torch.bfloat16)
    w = torch.randn(1000, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)

    def rms_norm(h, weight):
        hf = h.float()
        return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(h.dtype) * weight

    scalar, lanes = compiled_both_ways(rms_norm, x, w)
    assert_same_bits(scalar, lanes, any_nan=True)


@pytest.mark.parametrize("head_dim", [128, 40])
def test_rope_rotate_half(head_dim):
    # HF's rotate_half: cat's two pieces are two loops, in which its clamped gather positions are
    # contiguous (lane loops over each piece; a head dim of 40 leaves a scalar tail of 4 in each).
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(3, 9, head_dim, generator=g) * 4).to(torch.bfloat16)
    x.view(-1)[:14] = rounding_probes().view(-1)[:14].to(torch.bfloat16)
    angles = torch.arange(9).unsqueeze(1) * torch.rand(head_dim // 2, generator=g).repeat(2)
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)

    def rope(h, c, s):
        half = h.shape[-1] // 2
        return h * c + torch.cat((-h[..., half:], h[..., :half]), dim=-1) * s

    scalar, lanes = compiled_both_ways(rope, x, cos, sin)
    assert_same_bits(scalar, lanes, any_nan=True)
    assert_same_bits(torch.where(lanes.isnan(), rope(x, cos, sin), lanes), rope(x, cos, sin))


def test_exp_bf16():
    # Past both of lm_expf's clamps (-104, 89), denormal results included.
    x = (rounding_probes() * 30).to(torch.bfloat16)
    scalar, lanes = compiled_both_ways(torch.exp, x)
    assert_same_bits(scalar, lanes, any_nan=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_erf_and_gelu_on_four_interleaved_vectors(dtype, tmp_path):
    # An erf's lane loop takes four vectors per iteration (lm_erff_lanes<4>): rows of 1,000 are
    # 15 blocks of 64 and a scalar tail of 40. Both of erf's halves (|x| below 1, from 1 to 4),
    # its clamp at 4, infinities and NaNs.
    x = rounding_probes()
    x[5:20] = torch.linspace(-6, 6, 1000 * 15).view(15, 1000)
    x = x.to(dtype)
    for fn in (torch.erf, F.gelu):
        scalar, lanes = compiled_both_ways(fn, x)
        assert_same_bits(scalar, lanes, any_nan=True)
        torch.testing.assert_close(lanes[5:20].float(), fn(x[5:20]).float(), rtol=1e-2 if dtype == torch.bfloat16 else 1e-6,
                                   atol=1e-2 if dtype == torch.bfloat16 else 1e-6)
    torch._dynamo.reset()
    torch.compile(F.gelu, backend="luminal", options={"debug_dir": str(tmp_path)})(x)
    kernels = [p.read_text().split("extern \"C\" int64_t", 1)[1] for p in tmp_path.glob("kernels_*.cpp")]
    assert kernels and all("lm_erff_lanes<4>" in k for k in kernels), "gelu's erf is not on interleaved lanes"


def test_long_chain_of_shared_values_compiles_quickly():
    # Regression: x = x * x forty times is one kernel whose every op reads its argument twice;
    # the emitter's unmemoised walk over it was exponential (32 squarings took 104 s to compile).
    # In a child process, so that the regression fails on the timeout instead of hanging.
    import subprocess
    import sys

    program = (
        "import torch, luminal\n"
        "def f(x):\n"
        "    for _ in range(40):\n"
        "        x = x * x\n"
        "    return x\n"
        "x = torch.rand(8, 64).bfloat16()\n"
        "out = torch.compile(f, backend='luminal')(x)\n"
        "assert torch.equal(out, f(x)), 'the squarings differ from eager'\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=120)
