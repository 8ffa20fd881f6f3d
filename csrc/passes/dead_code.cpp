#include "passes/dead_code.h"

#include <vector>

namespace luminal::passes {

ir::Graph eliminate_dead_code(ir::Graph graph) {
  const size_t n = graph.size();
  std::vector<bool> live(n, false);
  for (const ir::TensorRef& r : graph.outputs()) live[r.node] = true;
  for (const ir::DataSymbol& s : graph.data_symbols()) live[s.value.node] = true;
  for (size_t i = n; i-- > 0;) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.op == ir::Op::Input || node.op == ir::Op::Weight) live[i] = true;
    if (!live[i]) continue;
    for (const ir::TensorRef& in : node.inputs) live[in.node] = true;
  }
  ir::Graph out;
  std::vector<ir::NodeId> renumber(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    ir::Node node = graph.node(static_cast<ir::NodeId>(i));
    for (ir::TensorRef& in : node.inputs) in.node = renumber[in.node];
    renumber[i] = out.add(std::move(node));
  }
  out.take_program_ends(graph, renumber);
  return out;
}

}  // namespace luminal::passes
