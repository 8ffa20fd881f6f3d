#include "passes/quantized_weights.h"

#include "passes/legalize_matmul.h"

namespace luminal::passes {

namespace {

// The Cast that `ref` reads whole, when it widens an int8 tensor to `dtype`: then reading its
// input through the Cast's own view reads the same elements.
const ir::TensorRef* widened_int8(const ir::Graph& graph, const ir::TensorRef& ref, ir::DType dtype) {
  const ir::Node& cast = graph.node(ref.node);
  if (cast.op != ir::Op::Cast || cast.dtype != dtype || !(ref.view == ir::View::contiguous(cast.shape))) return nullptr;
  return graph.node(cast.inputs[0].node).dtype == ir::DType::I8 ? &cast.inputs[0] : nullptr;
}

}  // namespace

ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph) {
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.op != ir::Op::Matmul) continue;
    ir::Node folded = node;
    if (node.dtype == ir::DType::F32 || node.dtype == ir::DType::BF16) {
      // Weight-only: the weight widened to the activations' dtype.
      const ir::TensorRef* weight = widened_int8(graph, node.inputs[1], node.dtype);
      if (!weight) continue;
      folded.inputs[1] = *weight;
    } else if (node.dtype == ir::DType::I32) {
      // Dynamic activations (aten::_int_mm): both operands int8, widened to i32.
      const ir::TensorRef* a = widened_int8(graph, node.inputs[0], node.dtype);
      const ir::TensorRef* weight = widened_int8(graph, node.inputs[1], node.dtype);
      if (!a || !weight) continue;
      folded.inputs = {*a, *weight};
    } else {
      continue;
    }
    if (!is_gemv(graph, folded)) continue;
    graph.mutable_node(static_cast<ir::NodeId>(i)) = std::move(folded);
  }
  return graph;
}

}  // namespace luminal::passes
