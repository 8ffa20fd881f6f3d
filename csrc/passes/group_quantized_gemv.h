// Recognises a decode-time Linear whose weight is quantized per group along K, as torchao's
// IntxWeightOnlyConfig (int4 or int8 values held one per byte, a scale and a zero point per
// group) reaches the IR: the dequantized weight is composed elementwise and read by a GEMV,
//   out[1, N] = Matmul(a [1, K], W^T),  W [N, G, group] = (Cast(q) - Cast(zero)) * scale,
// q an int8 weight [N, K = G * group] read contiguously, zero an int8 [N, G] and scale [N, G]
// (the Linear's dtype) broadcast along the group. The Sub is absent without zero points. A
// runtime computes the pattern as one GEMV that reads q's bytes and dequantizes in registers,
// so that no float copy of the weight is written per call (passes/quantized_weights.h does the
// same for per-channel int8, whose scale is applied after the product).
//
// A prompt's Linear of a few rows ([M, N] = Matmul(a [M, K], W^T), M <= gemv_rows.quantized_f32)
// is the same pattern: the kernel dequantizes each block of weight rows once for all of a's rows
// (bf16: where passes/legalize_matmul.h leaves the Matmul in bf16, up to its half-precision GEMV
// rows or on a CPU with a native bf16 GEMM).
//
// Only f32 and bf16 Linears, rank-2 Matmuls, and only where nothing outside the pattern reads
// its intermediates, so that skipping them changes no other result.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/gemv_rows.h"

namespace luminal::passes {

// A per-group operand (scale or zero point): element (n, g) at offset + n * row_stride +
// g * group_stride of `node`'s buffer.
struct GroupOperand {
  ir::NodeId node = -1;
  ir::Expr offset, row_stride, group_stride;
};

struct GroupQuantizedGemv {
  ir::NodeId out = -1;            // the Matmul: [M, N]
  std::vector<ir::NodeId> nodes;  // every node of the pattern, ascending (the Matmul last)
  ir::TensorRef a;                // [M, K], unit stride along K
  ir::NodeId weight = -1;         // q: int8, element (n, k) at n * K + k
  int64_t group = 0;              // weights per scale along K
  GroupOperand scale;             // the Linear's dtype
  std::optional<GroupOperand> zero;  // int8
};

// `users[n]` lists the nodes reading node n; `read_by_runtime[n]` whether the runtime reads it
// after the kernels (a graph output or a data symbol's value); gemv_rows.quantized_f32 and
// gemv_rows.quantized_bf16 the most rows of an f32 or bf16 Linear the pattern takes.
std::optional<GroupQuantizedGemv> match_group_quantized_gemv(const ir::Graph& graph, ir::NodeId matmul,
                                                             const std::vector<std::vector<ir::NodeId>>& users,
                                                             const std::vector<bool>& read_by_runtime,
                                                             const GemvRows& gemv_rows);

}  // namespace luminal::passes
