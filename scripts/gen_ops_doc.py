#!/usr/bin/env python3
"""Writes docs/ops.md: every Core ATen overload of the installed torch and every aten target the
real models produce, with whether luminal translates it and the dtypes tests/ops checked it in.

Sources, so that the table cannot drift from the code:
- translated overloads: the table in translator/registry.cpp (parsed, not imported: the doc
  needs no build);
- dtypes tested: the JSON tests/ops writes when run with
  `LUMINAL_OPS_COVERAGE=docs/ops_coverage.json python -m pytest tests/ops` (each overload the
  exported graphs of passing cases contained, with the dtypes of those cases);
- Core ATen: the overloads tagged torch.Tag.core in the installed torch.

Usage: python scripts/gen_ops_doc.py [--coverage docs/ops_coverage.json] [--out docs/ops.md]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

# aten targets in the 12 exported real-model programs after run_decompositions()
# (/work/shared/research/ops-in-real-models.md, section 2f), getitem and the custom op aside.
REAL_MODEL_TARGETS = """
_assert_tensor_metadata.default _softmax.default _to_copy.default add.Tensor addmm.default alias.default any.dim
arange.start_step bitwise_and.Tensor bmm.default cat.default clamp.default clone.default copy.default cos.default
cumsum.default div.Tensor div.Tensor_mode embedding.default empty_permuted.default eq.Scalar eq.Tensor expand.default
full.default full_like.default gather.default ge.Scalar gelu.default gt.Tensor histc.default index.Tensor
index_put.default le.Tensor logical_not.default mean.dim mm.default mul.Scalar mul.Tensor native_layer_norm.default
ne.Scalar neg.default permute.default pow.Tensor_Scalar relu.default rsqrt.default scalar_tensor.default select.int
sigmoid.default sin.default slice.Tensor sort.default split_with_sizes.default squeeze.dims sub.Tensor
sum.dim_IntList tanh.default topk.default unsqueeze.default view.default where.self
""".split()

# Why a Core ATen overload has no translation yet. An overload missing here and from the registry
# is reported as "unsupported (no reason recorded)" so that nothing hides.
UNSUPPORTED_REASONS = {
    "rand": "random: needs an RNG primitive or the ATen fallback",
    "randn": "random: needs an RNG primitive or the ATen fallback",
    "randperm": "random: needs an RNG primitive or the ATen fallback",
    "native_dropout": "random in training mode (eval graphs never contain it)",
    "nonzero": "data-dependent output shape: needs the ATen fallback",
    "_local_scalar_dense": "tensor to Python number (.item()): data-dependent control flow",
    "masked_scatter": "data-dependent source positions (a cumsum of the mask): not composed yet",
    "convolution": "convolution: needs a Conv primitive or an im2col lowering; not built yet",
    "convolution_backward": "backward op: luminal compiles inference graphs",
    "avg_pool2d_backward": "backward op: luminal compiles inference graphs",
    "_adaptive_avg_pool2d_backward": "backward op: luminal compiles inference graphs",
    "max_pool2d_with_indices_backward": "backward op: luminal compiles inference graphs",
    "native_group_norm_backward": "backward op: luminal compiles inference graphs",
    "native_layer_norm_backward": "backward op: luminal compiles inference graphs",
    "embedding_dense_backward": "backward op: luminal compiles inference graphs",
    "_native_batch_norm_legit": "training-mode batch norm (updates running stats); eval graphs use _no_training",
    "as_strided": "arbitrary strides over storage: not expressible on IR values; needs the ATen fallback",
    "empty_strided": "not composed yet (empty with a layout hint)",
    "resize_": "in-place storage resize",
    "sym_numel": "SymInt query: not composed yet",
    "sym_storage_offset": "SymInt query about storage: no storage in the IR",
    "sym_stride": "SymInt query about strides: IR values have no fixed strides",
    "_fft_r2c": "FFT: needs a primitive",
    "_fft_c2r": "FFT: needs a primitive and complex dtypes",
    "col2im": "not composed yet",
    "grid_sampler_2d": "not composed yet (data-dependent gather with interpolation)",
    "_cdist_forward": "not composed yet",
    "_pdist_forward": "not composed yet",
    "_embedding_bag": "not composed yet",
    "scatter_reduce": "not composed yet (needs prod/amax/amin/mean scatter modes)",
    "atan2.out": "out= variant: never in a functional graph",
}
NOT_COMPOSED_YET = "not composed yet: pooling/upsampling/padding family"
for _op in ("avg_pool2d", "avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "max_pool2d_with_indices",
            "max_pool3d_with_indices", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad2d",
            "replication_pad3d", "upsample_bilinear2d", "upsample_nearest2d"):
    UNSUPPORTED_REASONS[_op] = NOT_COMPOSED_YET

DTYPE_ORDER = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]
SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int16": "i16",
         "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool"}


def core_overloads() -> list[str]:
    names = []
    for packet_name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, packet_name, None)
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            if torch.Tag.core in getattr(packet, overload).tags:
                names.append(f"aten::{packet_name}.{overload}")
    return sorted(names)


def registered_overloads(registry: Path) -> set[str]:
    return set(re.findall(r'\{"([^"]+)",\s*translate_\w+\}', registry.read_text()))


def reason(overload: str) -> str:
    base = overload.split("::")[1]
    return UNSUPPORTED_REASONS.get(base) or UNSUPPORTED_REASONS.get(base.split(".")[0]) or "no reason recorded"


def dtypes_cell(dtypes: list[str]) -> str:
    return " ".join(SHORT[d] for d in DTYPE_ORDER if d in dtypes)


def render(core: list[str], registered: set[str], coverage: dict[str, list[str]]) -> str:
    real = {f"aten::{t}" for t in REAL_MODEL_TARGETS}
    rows = sorted(set(core) | real)
    lines = [
        "# Aten op coverage",
        "",
        "Generated by `scripts/gen_ops_doc.py` (do not edit by hand). **Core** = tagged `core` in torch "
        f"{torch.__version__.split('+')[0]}; **model** = produced by at least one of the 12 real-model programs "
        "(research/ops-in-real-models.md). **Tested dtypes** = the input dtypes of passing `tests/ops` cases whose "
        "exported graph contained the overload (an op that only appears inside another op's test counts too).",
        "",
        f"- Core ATen overloads: {len(core)}, translated natively: {sum(r in registered for r in core)}",
        f"- Real-model targets: {len(real)}, translated natively: {sum(r in registered for r in real)}",
        f"- Registry entries in total (non-core overloads included): {len(registered)}",
        "",
        "| overload | core | model | status | tested dtypes / reason |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        is_native = r in registered
        tested = coverage.get(r, [])
        detail = dtypes_cell(tested) if is_native else reason(r)
        if is_native and not tested:
            detail = "(not exercised by tests/ops yet)"
        lines.append(f"| `{r}` | {'yes' if r in core else ''} | {'yes' if r in real else ''} | "
                     f"{'native' if is_native else 'unsupported'} | {detail} |")
    extra = sorted(registered - set(rows))
    lines += ["", "## Translated overloads outside Core ATen", "",
              "Non-core overloads a graph can still contain (dynamo graphs before decomposition, SymInt arithmetic, "
              "ops luminal's decomposition table keeps whole).", "", "| overload | tested dtypes |", "|---|---|"]
    for r in extra:
        lines.append(f"| `{r}` | {dtypes_cell(coverage.get(r, [])) or '(not exercised by tests/ops)'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coverage", default=str(ROOT / "docs" / "ops_coverage.json"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "ops.md"))
    args = parser.parse_args()
    coverage_path = Path(args.coverage)
    coverage = json.loads(coverage_path.read_text()) if coverage_path.exists() else {}
    text = render(core_overloads(), registered_overloads(ROOT / "translator" / "registry.cpp"), coverage)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
