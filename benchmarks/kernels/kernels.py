"""The primitive kernels and their canonical shapes, with the minimal memory traffic and the flops
each one needs (what the effective GB/s, GFLOP/s and roofline percentages are computed from)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Kernel:
    kernel_id: str
    shape: tuple[int, ...]
    make_inputs: Callable[[torch.dtype, torch.Generator], tuple]
    fn: Callable[..., torch.Tensor]
    flops: float = 0.0  # 0: no matmul work, the kernel is judged on memory traffic alone
    # Bytes that must move when the kernel is not the whole of its inputs (embedding reads only the
    # gathered rows); None: every input read once + the output written once.
    bytes_override: Callable[[torch.dtype], float] | None = None

    @property
    def shape_str(self) -> str:
        return "x".join(map(str, self.shape))

    def key(self, dtype: str) -> str:
        return f"{self.kernel_id}/{self.shape_str}/{dtype}"


def _randn(*shape):
    return lambda dtype, g: (torch.randn(*shape, generator=g).to(dtype),)


def rms_norm(x, w):
    # Llama's RMSNorm: computed in f32 and cast back, as HF does.
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def rope(x, cos, sin):
    # HF's rotate_half formulation on (batch*heads, seq, head_dim), cos/sin per (seq, head_dim).
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def causal_mask(scores):
    # The mask is built inside the kernel from iota comparisons, then applied: what attention does.
    n, m = scores.shape[-2:]
    keep = torch.arange(n).unsqueeze(1) >= torch.arange(m).unsqueeze(0)
    return scores.masked_fill(~keep, float("-inf"))


def _norm_inputs(rows, cols, with_bias):
    def make(dtype, g):
        x = torch.randn(rows, cols, generator=g).to(dtype)
        w = torch.randn(cols, generator=g).to(dtype)
        return (x, w, torch.randn(cols, generator=g).to(dtype)) if with_bias else (x, w)

    return make


def _rope_inputs(b, s, d):
    def make(dtype, g):
        angles = torch.arange(s).unsqueeze(1) * torch.rand(d // 2, generator=g).repeat(2)
        return torch.randn(b, s, d, generator=g).to(dtype), angles.cos().to(dtype), angles.sin().to(dtype)

    return make


def _embedding_inputs(n, vocab, dim):
    return lambda dtype, g: (torch.randint(0, vocab, (n,), generator=g), torch.randn(vocab, dim, generator=g).to(dtype))


def _ce_inputs(n, vocab):
    return lambda dtype, g: (torch.randn(n, vocab, generator=g).to(dtype), torch.randint(0, vocab, (n,), generator=g))


def _matmul_inputs(m, k, n):
    return lambda dtype, g: (torch.randn(m, k, generator=g).to(dtype), torch.randn(k, n, generator=g).to(dtype))


def _linear_inputs(m, k, n):
    return lambda dtype, g: (torch.randn(m, k, generator=g).to(dtype), torch.randn(n, k, generator=g).to(dtype))


def _int8_weight_inputs(k, n, m=1):
    # torchao's Int8WeightOnlyConfig: an int8 [N, K] weight and a scale per output channel.
    def make(dtype, g):
        return (torch.randn(m, k, generator=g).to(dtype), torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8),
                (torch.rand(n, generator=g) / 64).to(dtype))

    return make


def gemv_int8(x, w, scale):
    # As torchao's int8 weight-only linear traces: the weight widened, the product scaled.
    return F.linear(x, w.to(x.dtype)) * scale


def _int4_weight_inputs(k, n, group, m=1):
    # IntxWeightOnlyConfig(int4, PerGroup(group)): values in [-8, 8) one per byte, a scale and an
    # int8 zero point per group of `group` weights along K.
    def make(dtype, g):
        return (torch.randn(m, k, generator=g).to(dtype), torch.randint(-8, 8, (n, k), generator=g, dtype=torch.int8),
                (torch.rand(n, k // group, generator=g) / 8).to(dtype),
                torch.randint(-8, 8, (n, k // group), generator=g, dtype=torch.int8))

    return make


def gemv_int4(x, q, scale, zero):
    # As torchao's IntxUnpackedToInt8Tensor linear traces: dequantized per group, then the product.
    n, k = q.shape
    grouped = q.view(n, scale.shape[1], -1).to(x.dtype) - zero.unsqueeze(-1).to(x.dtype)
    return F.linear(x, (grouped * scale.unsqueeze(-1)).view(n, k))


def _sdpa(causal):
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _sdpa_inputs(shape):
    return lambda dtype, g: tuple(torch.randn(*shape, generator=g).to(dtype) for _ in range(3))


def _sdpa_flops(b, h, s, d, causal):
    # QK^T and PV: 2 * 2*s*s*d per head; causal attention needs half of it.
    return 4 * b * h * s * s * d * (0.5 if causal else 1.0)


def all_kernels() -> list[Kernel]:
    kernels = []
    for shape in [(1, 1024), (64, 1024), (64, 4096)]:
        kernels.append(Kernel("softmax", shape, _randn(*shape), lambda x: torch.softmax(x, dim=-1)))
    for shape in [(1, 768), (64, 768), (1024, 768)]:
        kernels.append(Kernel("layer_norm", shape, _norm_inputs(*shape, True),
                              lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b, 1e-5)))
    for shape in [(1, 4096), (64, 4096), (1024, 4096)]:
        kernels.append(Kernel("rms_norm", shape, _norm_inputs(*shape, False), rms_norm))
    for shape in [(64, 4096), (1024, 4096)]:
        kernels.append(Kernel("gelu", shape, _randn(*shape), F.gelu))
        kernels.append(Kernel("silu", shape, _randn(*shape), F.silu))
    for shape in [(1, 64, 128), (32, 64, 128)]:
        kernels.append(Kernel("rope", shape, _rope_inputs(*shape), rope))
    kernels.append(Kernel("causal_mask", (512, 512), _randn(512, 512), causal_mask))
    n, vocab, dim = 32, 32000, 128
    kernels.append(Kernel("embedding", (n, vocab, dim), _embedding_inputs(n, vocab, dim), F.embedding,
                          bytes_override=lambda dtype: n * 8 + 2 * n * dim * dtype.itemsize))
    kernels.append(Kernel("cross_entropy", (32, 32000), _ce_inputs(32, 32000), F.cross_entropy))
    for m, k, nn in [(1024, 1024, 1024), (4096, 1024, 4096), (1, 4096, 4096)]:
        kernels.append(Kernel("gemm" if m > 1 else "gemv", (m, k, nn), _matmul_inputs(m, k, nn), torch.mm,
                              flops=2.0 * m * k * nn))
    # Decode through quantized weights (docs/quantization.md): the bytes torchao holds, streamed
    # once. int4 values are held one per byte, as torchao's IntxWeightOnlyConfig stores them.
    for k, nn in [(4096, 4096)]:
        kernels.append(Kernel("gemv_int8", (1, k, nn), _int8_weight_inputs(k, nn), gemv_int8, flops=2.0 * k * nn))
        kernels.append(Kernel("gemv_int4", (1, k, nn), _int4_weight_inputs(k, nn, 32), gemv_int4, flops=2.0 * k * nn))
    # An 8-token and a 128-token prompt through the 1B Llama's MLP up projection, quantized: the
    # strip GEMVs (past 64 rows only where the CPU multiplies bf16 pairs without AMX).
    for m, k, nn in [(8, 2048, 8192), (128, 2048, 8192)]:
        kernels.append(Kernel("linear_int8", (m, k, nn), _int8_weight_inputs(k, nn, m), gemv_int8,
                              flops=2.0 * m * k * nn))
        kernels.append(Kernel("linear_int4", (m, k, nn), _int4_weight_inputs(k, nn, 32, m), gemv_int4,
                              flops=2.0 * m * k * nn))
    # A 64-token prefill through the memory-bound Llama's projections as nn.Linear computes them
    # (x @ w.T): the MLP's up and down projections and the LM head; and the 8- and 128-token ones
    # through the 1B Llama's up projection, the unquantized peers of linear_int8 and linear_int4.
    for m, k, nn in [(64, 1024, 2816), (64, 2816, 1024), (64, 1024, 32000), (8, 2048, 8192), (128, 2048, 8192)]:
        kernels.append(Kernel("linear", (m, k, nn), _linear_inputs(m, k, nn), F.linear, flops=2.0 * m * k * nn))
    # A 32-token prefill through GPT-2's MLP up projection as its Conv1D computes it (x @ w, the
    # weight [K, N]): the column kernel reads the weight in place where sgemm packs it first.
    kernels.append(Kernel("conv1d", (32, 768, 3072), _matmul_inputs(32, 768, 3072), torch.mm,
                          flops=2.0 * 32 * 768 * 3072))
    # Reductions across rows: a Linear's bias gradient (the sum over 512 tokens) and BatchNorm's
    # per-channel mean over (N, H, W).
    kernels.append(Kernel("sum_rows", (512, 4096), _randn(512, 4096), lambda x: x.sum(0)))
    kernels.append(Kernel("channel_mean", (32, 64, 56, 56), _randn(32, 64, 56, 56), lambda x: x.mean((0, 2, 3))))
    # transformers builds position ids and padding masks with cumsum along the sequence.
    for shape in [(8, 4096), (64, 4096)]:
        kernels.append(Kernel("cumsum", shape, _randn(*shape), lambda x: torch.cumsum(x, dim=-1)))
    # Sizes read from the data: the output's length is the mask's count (luminal binds it at run
    # time; dynamo captures them with capture_dynamic_output_shape_ops, set by worker.py).
    kernels.append(Kernel("nonzero", (1024, 1024), _randn(1024, 1024), lambda x: torch.nonzero(x > 0)))
    kernels.append(Kernel("masked_select", (1024, 1024), _randn(1024, 1024), lambda x: x[x > 0]))
    for shape in [(1, 32, 512, 64), (1, 32, 1024, 128)]:
        for causal in (False, True):
            kernels.append(Kernel("sdpa_causal" if causal else "sdpa", shape, _sdpa_inputs(shape), _sdpa(causal),
                                  flops=_sdpa_flops(*shape, causal)))
    return kernels


def traffic_bytes(kernel: Kernel, inputs: tuple, output: torch.Tensor) -> float:
    if kernel.bytes_override is not None:
        return kernel.bytes_override(inputs[-1].dtype)
    return sum(t.nbytes for t in inputs) + output.nbytes
