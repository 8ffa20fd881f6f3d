#include "passes/linear_bias.h"

#include <vector>

namespace luminal::passes {

using ir::Expr;

std::optional<ir::TensorRef> linear_bias(const ir::Graph& graph, const ir::Node& add, ir::NodeId product) {
  if (add.op != ir::Op::Add || add.dtype != graph.node(product).dtype) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const ir::TensorRef& p = add.inputs[i];
    const ir::TensorRef& bias = add.inputs[1 - i];
    if (p.node != product || !(p.view == ir::View::contiguous(graph.node(product).shape))) continue;
    // A weight or an input: its buffer exists before the GEMM runs, wherever the GEMM is.
    const ir::Op source = graph.node(bias.node).op;
    if (graph.node(bias.node).dtype != add.dtype || (source != ir::Op::Weight && source != ir::Op::Input)) continue;
    const std::vector<Expr>& strides = bias.view.strides();
    bool vector = !strides.empty() && is_one(strides.back());
    for (size_t d = 0; d + 1 < strides.size() && vector; ++d)
      vector = strides[d] == Expr(int64_t{0}) || is_one(bias.view.shape()[d]);
    if (vector) return bias;
  }
  return std::nullopt;
}

}  // namespace luminal::passes
