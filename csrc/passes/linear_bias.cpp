#include "passes/linear_bias.h"

namespace luminal::passes {

namespace {

// `view` reads a contiguous `shape` buffer in order, as the same elements in a shape with the same
// last dim (of `view`'s shape, which is the reader's).
bool reads_reshaped_in_order(const ir::View& view, const ir::Shape& shape) {
  const ir::Shape& as = view.shape();
  return !as.empty() && !shape.empty() && as.back() == shape.back() && ir::numel(as) == ir::numel(shape) &&
         view == ir::View::contiguous(as);
}

}  // namespace

std::optional<ir::TensorRef> linear_bias(const ir::Graph& graph, const ir::Node& add, ir::NodeId product,
                                         bool through_reshape) {
  if (add.op != ir::Op::Add || add.dtype != graph.node(product).dtype) return std::nullopt;
  const ir::Shape& product_shape = graph.node(product).shape;
  for (size_t i = 0; i < 2; ++i) {
    const ir::TensorRef& p = add.inputs[i];
    const ir::TensorRef& bias = add.inputs[1 - i];
    if (p.node != product || !(p.view == ir::View::contiguous(product_shape) ||
                               (through_reshape && reads_reshaped_in_order(p.view, product_shape))))
      continue;
    // A weight or an input: its buffer exists before the GEMM runs, wherever the GEMM is.
    const ir::Op source = graph.node(bias.node).op;
    if (graph.node(bias.node).dtype != add.dtype || (source != ir::Op::Weight && source != ir::Op::Input)) continue;
    if (bias.view.is_last_dim_vector()) return bias;
  }
  return std::nullopt;
}

}  // namespace luminal::passes
