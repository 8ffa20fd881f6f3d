"""luminal's decomposition table for ExportedProgram.run_decompositions()."""

from __future__ import annotations

import torch

from .foreach_decompositions import foreach_decompositions

# Ops kept whole because the core translates them better than their decomposition:
# - scaled_dot_product_attention: one node the runtime can lower to a fused attention kernel.
#   Decomposing it also breaks export of dynamo graphs: export records the output strides of
#   the undecomposed op (a transposed layout), skips a `.contiguous()` that looked like a no-op,
#   and the decomposed math then produces a layout that a later `.view()` rejects (GPT-2).
# - reflection_pad{1,2,3}d, replication_pad{1,2,3}d: translated as one Gather per padded dim
#   with an Iota-derived index; torch's decomposition builds the same index from arange and
#   reads it through a multi-tensor index.Tensor.
KEPT_OPS = (
    torch.ops.aten.scaled_dot_product_attention.default,
    torch.ops.aten.reflection_pad1d.default,
    torch.ops.aten.reflection_pad2d.default,
    torch.ops.aten.reflection_pad3d.default,
    torch.ops.aten.replication_pad1d.default,
    torch.ops.aten.replication_pad2d.default,
    torch.ops.aten.replication_pad3d.default,
)


def decomposition_table() -> dict:
    table = torch.export.default_decompositions()
    table.update(foreach_decompositions())
    for op in KEPT_OPS:
        table.pop(op, None)
    return table
