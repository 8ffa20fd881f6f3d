#!/usr/bin/env python3
"""Writes docs/ops.md: every Core ATen overload of the installed torch and every aten target the
real models produce, with whether luminal translates it and the dtypes tests/ops checked it in.

Sources, so that the table cannot drift from the code:
- translated overloads: the table in translator/registry.cpp (parsed, not imported: the doc
  needs no build);
- dtypes tested: the JSON tests/ops and tests/training write when run with
  `LUMINAL_OPS_COVERAGE=docs/ops_coverage.json python -m pytest tests/ops tests/training` (each
  overload the exported graphs of passing cases contained, forward and backward graphs alike,
  with the dtypes of those cases);
- Core ATen: the overloads tagged torch.Tag.core in the installed torch;
- ATen fallback: an overload with no translation runs through the fallback when its schema
  returns only tensors and mutates nothing (the fallback also needs result shapes that follow
  from the input shapes: nonzero, the one core op whose shape depends on the data, is native).

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
# (/work/shared/research/ops-in-real-models.md, section 2f), getitem aside (the PT2 archive has no
# node for it: a multi-output node names each result), with transformers' MoE custom op.
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
REAL_MODEL_CUSTOM_OPS = ["transformers::grouped_mm_fallback.default"]

# Why a Core ATen overload has no native translation yet (it runs through the ATen fallback, or
# cannot run at all). An overload missing here and from the registry reports "no reason
# recorded" so that nothing hides.
NOT_NATIVE_REASONS = {
    "rand": "random: draws from torch's own generator, so eager and luminal agree under one seed",
    "randn": "random: draws from torch's own generator, so eager and luminal agree under one seed",
    "randperm": "random: draws from torch's own generator, so eager and luminal agree under one seed",
    # AOTAutograd's backward graphs reach the translator decomposed by luminal's table (torch's
    # core decompositions), as they reach inductor: only an archive made elsewhere holds these.
    "native_group_norm_backward": "decomposed into core ATen before translation (training graphs never hold it)",
    "native_layer_norm_backward": "decomposed into core ATen before translation (training graphs never hold it)",
    "embedding_dense_backward": "decomposed into core ATen before translation (training graphs never hold it)",
    "as_strided": "arbitrary strides over storage: not expressible on IR values",
    "resize_": "in-place storage resize",
    "_fft_r2c": "FFT: needs a primitive",
    "_fft_c2r": "FFT: needs a primitive and complex dtypes",
    "col2im": "not composed yet",
    "grid_sampler_2d": "not composed yet (data-dependent gather with interpolation)",
    "_cdist_forward": "not composed yet",
    "_pdist_forward": "not composed yet",
    "_embedding_bag": "not composed yet",
}
# Native overloads that no exported program writes, so no tests/ops case can produce them: where
# their translation is tested instead.
TESTED_OUTSIDE_OPS = {
    name: "torch.export folds it into sym_size arithmetic or a constant; translation tested in "
    "tests/cpp/test_translator.cpp (TranslateSymQueries)"
    for name in ("aten::sym_numel.default", "aten::sym_stride.int", "aten::sym_storage_offset.default")
}
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
    return NOT_NATIVE_REASONS.get(base) or NOT_NATIVE_REASONS.get(base.split(".")[0]) or "no reason recorded"


def fallback_blocker(overload: str) -> str | None:
    """Why the ATen fallback cannot run this overload, or None when it can."""
    name, _, overload_name = overload.removeprefix("aten::").partition(".")
    schema = getattr(getattr(torch.ops.aten, name), overload_name)._schema
    if schema.is_mutable:
        return "mutates its arguments: never in a functional (exported) graph"
    returns = [str(r.type) for r in schema.returns]
    if any(t not in ("Tensor", "Tensor[]") for t in returns):
        return f"returns {', '.join(returns)}, not tensors: a number the graph would branch on"
    return None


def status(overload: str, registered: set[str]) -> str:
    if overload in registered:
        return "native"
    return "unsupported" if fallback_blocker(overload) else "fallback"


def dtypes_cell(dtypes: list[str]) -> str:
    return " ".join(SHORT[d] for d in DTYPE_ORDER if d in dtypes)


def render(core: list[str], registered: set[str], coverage: dict[str, list[str]]) -> str:
    real = {f"aten::{t}" for t in REAL_MODEL_TARGETS} | set(REAL_MODEL_CUSTOM_OPS)
    rows = sorted(set(core) | real)
    lines = [
        "# Aten op coverage",
        "",
        "Generated by `scripts/gen_ops_doc.py` (do not edit by hand). **Core** = tagged `core` in torch "
        f"{torch.__version__.split('+')[0]}; **model** = produced by at least one of the 12 real-model programs "
        "(research/ops-in-real-models.md). **Tested dtypes** = the input dtypes of passing `tests/ops` and "
        "`tests/training` cases whose exported graph (forward or backward) contained the overload (an op that only "
        "appears inside another op's test counts too). Backward ops torch keeps whole in AOTAutograd's graphs "
        "(convolution_backward, the pooling backwards) are native; the others reach luminal decomposed into core "
        "ATen, as they reach inductor (docs/training.md).",
        "",
        "**Status**: *native* = translated into luminal's IR (fused, compiled); *fallback* = no translation yet, runs "
        "through torch's own kernel via the ATen fallback (`options={'fallback': 'aten'}`, the default; listed in "
        "`stats['fallback_ops']` and logged); *unsupported* = cannot run, with the reason.",
        "",
        f"- Core ATen overloads: {len(core)}; native: {sum(status(r, registered) == 'native' for r in core)}, "
        f"ATen fallback: {sum(status(r, registered) == 'fallback' for r in core)}, "
        f"unsupported: {sum(status(r, registered) == 'unsupported' for r in core)}",
        f"- Real-model targets: {len(real)} (getitem aside, which the PT2 archive resolves into named results), "
        f"translated natively: {sum(r in registered for r in real)}",
        f"- Registry entries in total (non-core overloads included): {len(registered)}",
        "",
        "| overload | core | model | status | tested dtypes / reason |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        kind = status(r, registered)
        tested = dtypes_cell(coverage.get(r, []))
        if kind == "native":
            detail = tested or TESTED_OUTSIDE_OPS.get(r, "(not exercised by tests/ops yet)")
        elif kind == "fallback":
            detail = f"{tested} (through the fallback); not native: {reason(r)}" if tested else f"not native: {reason(r)}"
        else:
            detail = fallback_blocker(r) or reason(r)
        lines.append(f"| `{r}` | {'yes' if r in core else ''} | {'yes' if r in real else ''} | {kind} | {detail} |")
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
