#include "passes/fusion/legal.h"

#include <algorithm>
#include <vector>

#include "codegen/lower.h"

namespace luminal::passes {

namespace {

using ir::Expr;
using ir::Shape;

Shape per_row_shape(const Shape& s, int axis) {
  Shape r = s;
  r[axis] = Expr(int64_t{1});
  return r;
}

bool fusable_kind(GroupKind k) { return k == GroupKind::Pointwise || k == GroupKind::Row; }

// Strides equal wherever the size is not 1 (a size-1 dim never advances).
bool same_strides(const Shape& shape, const std::vector<Expr>& a, const std::vector<Expr>& b) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (!is_one(shape[d]) && a[d] != b[d]) return false;
  return true;
}

bool identity_view(const ir::View& v, const Shape& shape) {
  return v.shape() == shape && is_zero(v.offset()) && same_strides(shape, v.strides(), codegen::contiguous_strides(shape));
}

// The domain of the merged group, if the two domains can share one loop nest.
bool merged_domain(const Group& a, const Group& b, MergeDecision& d) {
  if (a.kind == GroupKind::Pointwise && b.kind == GroupKind::Pointwise) {
    if (!(a.domain == b.domain)) {
      d.reason = "pointwise shapes differ: " + ir::shape_to_string(a.domain) + " vs " + ir::shape_to_string(b.domain);
      return false;
    }
    d.kind = GroupKind::Pointwise;
    d.domain = a.domain;
    return true;
  }
  const Group& row = a.kind == GroupKind::Row ? a : b;
  const Group& other = a.kind == GroupKind::Row ? b : a;
  if (other.kind == GroupKind::Row) {
    if (!(row.domain == other.domain) || row.reduce_axis != other.reduce_axis) {
      d.reason = "row kernels over different domains or axes";
      return false;
    }
  } else if (!(other.domain == row.domain) && !(other.domain == per_row_shape(row.domain, row.reduce_axis))) {
    d.reason = "pointwise shape " + ir::shape_to_string(other.domain) + " is neither the row domain " +
               ir::shape_to_string(row.domain) + " nor its per-row shape";
    return false;
  }
  d.kind = GroupKind::Row;
  d.domain = row.domain;
  d.reduce_axis = row.reduce_axis;
  return true;
}

// Can `consumer` read `producer` through `view` inside the merged loop nest?
bool edge_fusable(const ir::Graph& graph, ir::NodeId producer, ir::NodeId consumer, size_t input, const ir::View& view,
                  const MergeDecision& d, std::string& why) {
  const ir::Node& user = graph.node(consumer);
  if (user.op == ir::Op::Gather && input == 0) {
    why = "a Gather's data is read at data-dependent positions";
    return false;
  }
  const Shape& shape = graph.node(producer).shape;
  if (identity_view(view, shape)) return true;
  if (d.kind == GroupKind::Row) {
    // A per-row value broadcast along the reduce axis.
    const int axis = d.reduce_axis;
    const Shape row_shape = per_row_shape(d.domain, axis);
    if (shape == row_shape && view.shape() == d.domain && is_zero(view.offset())) {
      std::vector<Expr> expected = codegen::contiguous_strides(row_shape);
      expected[axis] = Expr(int64_t{0});
      if (same_strides(d.domain, view.strides(), expected)) return true;
    }
  }
  why = "%" + std::to_string(consumer) + " reads %" + std::to_string(producer) + " through the view " + view.to_string();
  return false;
}

// Whether a node of `holder` holds a data symbol's value that a node of group `reader` mentions.
bool holds_symbol_read_by(const Partition& p, const Group& holder, int reader) {
  for (ir::NodeId id : holder.nodes)
    for (ir::NodeId user : p.symbol_readers[id])
      if (p.group_of[user] == reader) return true;
  return false;
}

// Whether some group outside {from, to} lies on a path from group `from` to group `to`.
bool path_through_others(const ir::Graph& graph, const Partition& p, int from, int to) {
  const ir::NodeId limit = p.groups[to].nodes.back();
  std::vector<int> stack;
  std::vector<bool> seen(p.groups.size(), false);
  auto push_successors = [&](int g, bool first) {
    for (ir::NodeId id : p.groups[g].nodes)
      for (ir::NodeId user : p.users[id]) {
        const int ug = p.group_of[user];
        if (ug < 0 || ug == g || seen[ug]) continue;
        if (first && ug == to) continue;  // the direct edge is what we are merging
        seen[ug] = true;
        stack.push_back(ug);
      }
  };
  push_successors(from, true);
  while (!stack.empty()) {
    const int g = stack.back();
    stack.pop_back();
    if (g == to) return true;
    if (g == from || p.groups[g].nodes.front() > limit) continue;
    push_successors(g, false);
  }
  return false;
}

}  // namespace

MergeDecision legal_merge(const ir::Graph& graph, const Partition& p, int producer, int consumer,
                          size_t max_group_nodes) {
  MergeDecision d;
  const Group& a = p.groups[producer];
  const Group& b = p.groups[consumer];
  if (producer == consumer || !a.alive || !b.alive) {
    d.reason = "not two live groups";
    return d;
  }
  if (!fusable_kind(a.kind) || !fusable_kind(b.kind)) {
    d.reason = std::string(group_kind_name(a.kind)) + " -> " + group_kind_name(b.kind) + " is not a loop fusion";
    return d;
  }
  if (a.nodes.size() + b.nodes.size() > max_group_nodes) {
    d.reason = "the merged kernel would exceed " + std::to_string(max_group_nodes) + " nodes";
    return d;
  }
  if (!merged_domain(a, b, d)) return d;
  if (holds_symbol_read_by(p, a, consumer) || holds_symbol_read_by(p, b, producer)) {
    d.reason = "one group computes a data symbol's value that the other's sizes mention";
    return d;
  }
  // Every edge between the two groups, either way.
  for (int side = 0; side < 2; ++side) {
    const Group& users = side == 0 ? b : a;
    const int source = side == 0 ? producer : consumer;
    for (ir::NodeId id : users.nodes) {
      const ir::Node& node = graph.node(id);
      for (size_t j = 0; j < node.inputs.size(); ++j) {
        const ir::TensorRef& in = node.inputs[j];
        if (p.group_of[in.node] != source) continue;
        std::string why;
        if (!edge_fusable(graph, in.node, id, j, in.view, d, why)) {
          d.reason = why;
          return d;
        }
      }
    }
  }
  if (path_through_others(graph, p, producer, consumer) || path_through_others(graph, p, consumer, producer)) {
    d.reason = "a path between the groups leaves them (the union would not be convex)";
    return d;
  }
  d.legal = true;
  d.reason = std::string(group_kind_name(d.kind)) + " " + ir::shape_to_string(d.domain) +
             (d.reduce_axis >= 0 ? " reduce axis " + std::to_string(d.reduce_axis) : "");
  return d;
}

}  // namespace luminal::passes
