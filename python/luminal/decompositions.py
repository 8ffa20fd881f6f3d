"""luminal's decomposition table for ExportedProgram.run_decompositions()."""

from __future__ import annotations

import torch

# Ops kept whole because the core translates them better than their decomposition:
# - scaled_dot_product_attention: one node the runtime can lower to a fused attention kernel.
#   Decomposing it also breaks export of dynamo graphs: export records the output strides of
#   the undecomposed op (a transposed layout), skips a `.contiguous()` that looked like a no-op,
#   and the decomposed math then produces a layout that a later `.view()` rejects (GPT-2).
KEPT_OPS = (torch.ops.aten.scaled_dot_product_attention.default,)


def decomposition_table() -> dict:
    table = torch.export.default_decompositions()
    for op in KEPT_OPS:
        table.pop(op, None)
    return table
