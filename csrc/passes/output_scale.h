// A per-channel quantized Linear's scale as the GEMV that computes its product can apply it:
// out = Mul(a x b, scale) where scale is a vector along the product's last dim (one factor per
// output channel, broadcast over every other dim), read from a Weight or graph Input either
// directly in the product's dtype or through a Cast to it (torchao's int8 weights keep f32
// scales and cast them to bf16 activations' dtype: `linear(x, w.to(bf16)) * scale.to(bf16)`).
// A runtime whose GEMV rounds its sum to the product's dtype, multiplies it by the scale converted
// as the Cast converts it, and rounds again (the cpu runtime's row and strip GEMVs) computes the
// Mul's bits without the Mul's kernel, the Cast's, or the product's buffer.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace luminal::passes {

struct OutputScale {
  ir::TensorRef scale;     // the Weight or Input, read as the Mul reads its operand: [.., N], stride 0 but along N
  ir::NodeId cast = -1;    // the Cast between them (read by the Mul alone), or -1
};

// The scale `mul` multiplies `product` by, or none when `mul` is not product x scale vector in
// either operand order. `users[n]` lists the nodes reading node n; `read_by_runtime[n]` whether the
// runtime reads it after the kernels: a Cast either reads keeps its own kernel, so it is no match.
std::optional<OutputScale> output_scale(const ir::Graph& graph, const ir::Node& mul, ir::NodeId product,
                                        const std::vector<std::vector<ir::NodeId>>& users,
                                        const std::vector<bool>& read_by_runtime);

}  // namespace luminal::passes
