#include "passes/quantized_weights.h"

#include "passes/legalize_matmul.h"

namespace luminal::passes {

ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph) {
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.op != ir::Op::Matmul || (node.dtype != ir::DType::F32 && node.dtype != ir::DType::BF16)) continue;
    const ir::TensorRef& b = node.inputs[1];
    const ir::Node& cast = graph.node(b.node);
    // The Cast read whole, as computed: then reading its input through the Cast's own view
    // reads the same elements.
    if (cast.op != ir::Op::Cast || cast.dtype != node.dtype || !(b.view == ir::View::contiguous(cast.shape))) continue;
    if (graph.node(cast.inputs[0].node).dtype != ir::DType::I8) continue;
    ir::Node folded = node;
    folded.inputs[1] = cast.inputs[0];
    if (!is_gemv(folded)) continue;
    graph.mutable_node(static_cast<ir::NodeId>(i)) = std::move(folded);
  }
  return graph;
}

}  // namespace luminal::passes
