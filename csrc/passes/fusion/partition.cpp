#include "passes/fusion/partition.h"

#include <algorithm>
#include <map>
#include <queue>
#include <sstream>

namespace luminal::passes {

const char* group_kind_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::Source: return "source";
    case GroupKind::Inlined: return "inlined";
    case GroupKind::Pointwise: return "pointwise";
    case GroupKind::Row: return "row";
    case GroupKind::Matmul: return "matmul";
    case GroupKind::GroupedMatmul: return "grouped matmul";
    case GroupKind::Scatter: return "scatter";
    case GroupKind::AtenCall: return "aten call";
    case GroupKind::Collective: return "collective";
    case GroupKind::Attention: return "attention";
    case GroupKind::QuantizedGemv: return "quantized gemv";
    case GroupKind::Scan: return "scan";
  }
  return "?";
}

namespace {
void add_symbol_readers(const ir::Graph& graph, Partition& p) {
  p.symbol_readers.assign(graph.size(), {});
  if (graph.data_symbols().empty()) return;
  std::map<std::string, ir::NodeId> value_of;
  for (const ir::DataSymbol& s : graph.data_symbols()) value_of[s.name] = s.value.node;
  std::vector<std::string> mentioned;
  for (size_t i = 0; i < graph.size(); ++i) {
    mentioned.clear();
    ir::collect_symbols(graph.node(static_cast<ir::NodeId>(i)), mentioned);
    for (const std::string& name : mentioned) {
      auto it = value_of.find(name);
      if (it == value_of.end()) continue;
      p.users[it->second].push_back(static_cast<ir::NodeId>(i));
      p.symbol_readers[it->second].push_back(static_cast<ir::NodeId>(i));
    }
  }
}
}  // namespace

Partition initial_partition(const ir::Graph& graph) {
  using ir::Op;
  Partition p;
  const size_t n = graph.size();
  p.users.resize(n);
  p.read_by_runtime.assign(n, false);
  p.group_of.assign(n, -1);
  std::vector<bool> needs_buffer(n, false);
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      p.users[node.inputs[j].node].push_back(static_cast<ir::NodeId>(i));
      const bool operand = node.op == Op::Matmul || node.op == Op::GroupedMatmul || node.op == Op::Scatter ||
                           node.op == Op::AtenCall || node.op == Op::Collective || ir::op_has(node.op, ir::kScan) ||
                           (node.op == Op::Gather && j == 0);
      if (operand) needs_buffer[node.inputs[j].node] = true;
    }
  }
  for (const ir::TensorRef& r : graph.outputs()) {
    p.read_by_runtime[r.node] = true;
    needs_buffer[r.node] = true;
  }
  add_symbol_readers(graph, p);
  for (const ir::DataSymbol& s : graph.data_symbols()) {
    p.read_by_runtime[s.value.node] = true;
    needs_buffer[s.value.node] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    Group g;
    g.nodes = {static_cast<ir::NodeId>(i)};
    g.domain = node.shape;
    switch (node.op) {
      case Op::Input:
      case Op::Weight: g.kind = GroupKind::Source; break;
      case Op::Constant:
      case Op::Iota:
        if (!needs_buffer[i]) continue;  // inlined: no group
        g.kind = GroupKind::Pointwise;
        break;
      case Op::Matmul: g.kind = GroupKind::Matmul; break;
      case Op::GroupedMatmul: g.kind = GroupKind::GroupedMatmul; break;
      case Op::Scatter: g.kind = GroupKind::Scatter; break;
      case Op::AtenCall: g.kind = GroupKind::AtenCall; break;
      case Op::Collective: g.kind = GroupKind::Collective; break;
      default:
        if (ir::op_has(node.op, ir::kReduction)) {
          g.kind = GroupKind::Row;
          g.domain = node.inputs[0].view.shape();
          g.reduce_axis = node.axis;
        } else if (ir::op_has(node.op, ir::kScan)) {
          g.kind = GroupKind::Scan;
        } else {
          g.kind = GroupKind::Pointwise;
        }
    }
    p.group_of[i] = static_cast<int>(p.groups.size());
    p.groups.push_back(std::move(g));
  }
  return p;
}

std::vector<int> topological_groups(const Partition& p) {
  const size_t count = p.groups.size();
  std::vector<std::vector<int>> successors(count);
  std::vector<int> pending(count, 0);
  for (size_t g = 0; g < count; ++g) {
    if (!p.groups[g].alive) continue;
    std::vector<int> next;
    for (ir::NodeId id : p.groups[g].nodes)
      for (ir::NodeId user : p.users[id]) {
        const int ug = p.group_of[user];
        if (ug >= 0 && ug != static_cast<int>(g)) next.push_back(ug);
      }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    for (int ug : next) ++pending[ug];
    successors[g] = std::move(next);
  }
  // Ready groups by rank (collectives, then the rest, then a collective's readers), then by their
  // first node, so the order stays close to the graph's.
  std::vector<int> rank(count, 1);
  for (size_t g = 0; g < count; ++g) {
    if (!p.groups[g].alive || p.groups[g].kind != GroupKind::Collective) continue;
    for (int s : successors[g]) rank[s] = 2;
  }
  for (size_t g = 0; g < count; ++g)
    if (p.groups[g].alive && p.groups[g].kind == GroupKind::Collective) rank[g] = 0;
  auto later = [&](int a, int b) {
    if (rank[a] != rank[b]) return rank[a] > rank[b];
    return p.groups[a].nodes.front() > p.groups[b].nodes.front();
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (size_t g = 0; g < count; ++g)
    if (p.groups[g].alive && pending[g] == 0) ready.push(static_cast<int>(g));
  std::vector<int> order;
  while (!ready.empty()) {
    const int g = ready.top();
    ready.pop();
    order.push_back(g);
    for (int s : successors[g])
      if (--pending[s] == 0) ready.push(s);
  }
  return order;
}

std::vector<ir::NodeId> stored_nodes(const ir::Graph& graph, const Partition& p, int group) {
  std::vector<ir::NodeId> out;
  for (ir::NodeId id : p.groups[group].nodes) {
    bool outside = p.read_by_runtime[id];
    for (ir::NodeId user : p.users[id]) outside = outside || p.group_of[user] != group;
    if (outside) out.push_back(id);
  }
  return out;
}

std::string partition_to_text(const ir::Graph& graph, const Partition& p) {
  std::ostringstream out;
  for (int g : topological_groups(p)) {
    const Group& group = p.groups[g];
    if (group.kind == GroupKind::Source) continue;
    out << "group " << g << " " << group_kind_name(group.kind) << " " << ir::shape_to_string(group.domain);
    if (group.reduce_axis >= 0) out << " reduce axis " << group.reduce_axis;
    out << ":";
    for (ir::NodeId id : group.nodes) out << " %" << id << ":" << ir::op_name(graph.node(id).op);
    out << "\n";
  }
  return out.str();
}

}  // namespace luminal::passes
