#include "passes/fusion/score.h"

#include <vector>

namespace luminal::passes {

namespace {
double representative_bytes(const ir::Node& node) {
  ir::SymbolBindings bindings;
  std::vector<std::string> names;
  for (const ir::Expr& d : node.shape) d.collect_symbols(names);
  for (const std::string& s : names) bindings[s] = 128;
  return static_cast<double>(ir::numel(node.shape).evaluate(bindings)) * static_cast<double>(ir::dtype_size(node.dtype));
}
}  // namespace

double merge_score(const ir::Graph& graph, const Partition& p, int producer, int consumer) {
  double score = 0;
  for (ir::NodeId id : p.groups[producer].nodes) {
    bool read_by_consumer = false;
    bool read_elsewhere = p.read_by_runtime[id];
    for (ir::NodeId user : p.users[id]) {
      const int g = p.group_of[user];
      if (g == consumer) read_by_consumer = true;
      else if (g != producer) read_elsewhere = true;
    }
    if (!read_by_consumer) continue;
    const double bytes = representative_bytes(graph.node(id));
    // The consumer's read disappears; the producer's write too unless someone else reads it.
    score += bytes * (read_elsewhere ? 1.0 : 2.0);
  }
  // Always worth a little: one kernel launch and one loop fewer.
  return score + 64.0;
}

}  // namespace luminal::passes
