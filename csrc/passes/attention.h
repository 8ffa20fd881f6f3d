// Recognises scaled dot-product attention in the primitive IR, so that a runtime can compute it
// as one pattern kernel that never writes the [.., L, S] scores to memory. The shape matched is
// the one translator/attention.cpp composes:
//   out = Matmul(P, v),  P = exps / where(sum == 0, 1, sum),  exps = exp(x - where(max == -inf, 0, max)),
//   x = Matmul(q, kᵀ) * scale [+ bias],  max and sum reduced over the last axis,
// bias any [.., L, S] tensor, or a causal mask where(iota_s (+ c) <= iota_l (+ shift), 0, -inf).
// Only f32 (the translator computes f16/bf16 attention in f32) and only where nothing outside
// the pattern reads its intermediates, so that skipping them changes no other result. With
// `half_operands`, a q, k or v that is an f16/bf16 tensor cast whole to f32 for the pattern alone
// is read as the f16/bf16 tensor (the cast joins the pattern): the kernel widens each element as
// it reads it, which is exact, so the result is the same.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace luminal::passes {

// A causal mask computed from the indices: query row l attends key s where
// s <= l + shift (+ the value of shift_tensor).
struct CausalMask {
  int64_t shift = 0;
  std::optional<ir::TensorRef> shift_tensor;  // an integer tensor's one element, read everywhere
};

struct AttentionPattern {
  ir::NodeId out = -1;                 // the P x v Matmul: [batch.., L, Ev]
  std::vector<ir::NodeId> nodes;       // every non-constant node of the pattern, ascending
  ir::TensorRef q;                     // [batch.., L, E], f32 or (half_operands) f16/bf16
  ir::TensorRef k_transposed;          // [batch.., E, S], likewise
  ir::TensorRef v;                     // [batch.., S, Ev], likewise
  std::optional<ir::TensorRef> bias;   // [batch.., L, S], added to the scaled scores
  // The bias is a causal mask, 0 where key s <= query l (+ a shift) and -inf past it, that
  // nothing else reads (torch's is_causal as the translator composes it from iotas, or a
  // transformers mask over a StaticCache): the kernel masks each row itself (`bias` is empty).
  std::optional<CausalMask> causal;
  double scale = 1.0;

  // The nodes the pattern's kernel reads: q, k, v, and the bias or the causal mask's shift tensor.
  std::vector<ir::NodeId> operands() const;
};

// `users[n]` lists the nodes reading node n; `read_by_runtime[n]` whether the runtime reads it after
// the kernels (a graph output or a data symbol's value).
std::optional<AttentionPattern> match_attention(const ir::Graph& graph, ir::NodeId matmul,
                                                const std::vector<std::vector<ir::NodeId>>& users,
                                                const std::vector<bool>& read_by_runtime, bool half_operands);

}  // namespace luminal::passes
