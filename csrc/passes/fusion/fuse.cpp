#include "passes/fusion/fuse.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "passes/attention.h"
#include "passes/fusion/legal.h"
#include "passes/fusion/score.h"
#include "passes/group_quantized_gemv.h"

namespace luminal::passes {

namespace {

struct Candidate {
  double score;
  int producer;
  int consumer;
};

std::vector<std::pair<int, int>> producer_consumer_pairs(const ir::Graph& graph, const Partition& p) {
  std::set<std::pair<int, int>> pairs;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    if (!p.groups[g].alive) continue;
    for (ir::NodeId id : p.groups[g].nodes)
      for (const ir::TensorRef& in : graph.node(id).inputs) {
        const int pg = p.group_of[in.node];
        if (pg >= 0 && pg != static_cast<int>(g)) pairs.insert({pg, static_cast<int>(g)});
      }
  }
  return {pairs.begin(), pairs.end()};
}

void merge(Partition& p, int producer, int consumer, const MergeDecision& d) {
  Group& into = p.groups[consumer];
  Group& from = p.groups[producer];
  for (ir::NodeId id : from.nodes) p.group_of[id] = consumer;
  into.nodes.insert(into.nodes.end(), from.nodes.begin(), from.nodes.end());
  std::sort(into.nodes.begin(), into.nodes.end());
  into.kind = d.kind;
  into.domain = d.domain;
  into.reduce_axis = d.reduce_axis;
  from.alive = false;
  from.nodes.clear();
}

std::string describe(const ir::Graph& graph, const Partition& p, int g) {
  std::ostringstream s;
  s << "group " << g << " [";
  const auto& nodes = p.groups[g].nodes;
  for (size_t i = 0; i < nodes.size() && i < 4; ++i) s << (i ? " " : "") << "%" << nodes[i] << ":" << ir::op_name(graph.node(nodes[i]).op);
  if (nodes.size() > 4) s << " +" << nodes.size() - 4;
  s << "]";
  return s.str();
}

// A matched pattern's nodes (ascending) become one group of `kind`: the group of its last
// node, `out`, takes them over from their own groups.
void group_pattern(Partition& p, ir::NodeId out, const std::vector<ir::NodeId>& nodes, GroupKind kind) {
  const int into = p.group_of[out];
  for (ir::NodeId member : nodes) {
    const int g = p.group_of[member];
    if (g == into) continue;
    p.groups[g].alive = false;
    p.groups[g].nodes.clear();
    p.group_of[member] = into;
  }
  p.groups[into].nodes = nodes;
  p.groups[into].kind = kind;
}

// Pointwise groups whose values no kernel reads once the attention patterns are grouped: a
// causal mask's comparison and the shifted indices it compares, which an attention kernel
// computes from the indices instead (AttentionPattern::causal), however many layers' masks
// read that comparison. A reader inside an Attention group reads only the pattern's operands
// (`attention_operand`). The dropped groups' nodes belong to no group, as inlined sources.
void drop_unread_groups(Partition& p, const std::vector<bool>& attention_operand, PassContext& cx) {
  const std::vector<int> order = topological_groups(p);
  for (auto g = order.rbegin(); g != order.rend(); ++g) {
    Group& group = p.groups[*g];
    if (group.kind != GroupKind::Pointwise) continue;
    bool read = false;
    for (ir::NodeId id : group.nodes) {
      read = read || p.read_by_runtime[id];
      for (ir::NodeId user : p.users[id]) {
        const int reader = p.group_of[user];
        if (reader == *g || reader < 0) continue;  // < 0: dropped already
        read = read || p.groups[reader].kind != GroupKind::Attention || attention_operand[id];
      }
    }
    if (read) continue;
    if (!cx.debug_dir.empty())
      cx.log.push_back("drop group " + std::to_string(*g) + " (%" + std::to_string(group.nodes.front()) +
                       "): no kernel reads it");
    for (ir::NodeId id : group.nodes) p.group_of[id] = -1;
    group.nodes.clear();
    group.alive = false;
  }
}

// Each attention pattern becomes one Attention group, before loop fusion could split it up.
// Its operands must keep buffers of their own: an inlined constant has none.
void group_attention(const ir::Graph& graph, Partition& p, PassContext& cx) {
  std::vector<bool> attention_operand(graph.size(), false);
  bool causal = false;
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::NodeId id = static_cast<ir::NodeId>(i);
    if (graph.node(id).op != ir::Op::Matmul) continue;
    const std::optional<AttentionPattern> pattern =
        match_attention(graph, id, p.users, p.read_by_runtime, cx.attention_half_operands);
    if (!pattern) continue;
    const std::vector<ir::NodeId> operands = pattern->operands();
    if (std::any_of(operands.begin(), operands.end(), [&](ir::NodeId operand) { return p.group_of[operand] < 0; }))
      continue;  // an inlined operand
    group_pattern(p, id, pattern->nodes, GroupKind::Attention);
    for (ir::NodeId operand : operands) attention_operand[operand] = true;
    causal = causal || pattern->causal.has_value();
    if (!cx.debug_dir.empty())
      cx.log.push_back("attention %" + std::to_string(id) + ": " + std::to_string(pattern->nodes.size()) +
                       " nodes in one kernel");
  }
  if (causal) drop_unread_groups(p, attention_operand, cx);
}

// Each group-quantized GEMV becomes one QuantizedGemv group, before loop fusion could compute
// its dequantized weight as a kernel of its own.
void group_quantized_gemvs(const ir::Graph& graph, Partition& p, PassContext& cx) {
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::NodeId id = static_cast<ir::NodeId>(i);
    if (graph.node(id).op != ir::Op::Matmul) continue;
    const std::optional<GroupQuantizedGemv> pattern =
        match_group_quantized_gemv(graph, id, p.users, p.read_by_runtime, cx.gemv_rows);
    if (!pattern) continue;
    group_pattern(p, id, pattern->nodes, GroupKind::QuantizedGemv);
    if (!cx.debug_dir.empty())
      cx.log.push_back("quantized gemv %" + std::to_string(id) + ": groups of " + std::to_string(pattern->group) +
                       (pattern->zero ? " with zero points" : ""));
  }
}

}  // namespace

Partition fuse(const ir::Graph& graph, PassContext& cx) {
  Partition p = initial_partition(graph);
  if (cx.attention_kernels) group_attention(graph, p, cx);
  if (cx.group_quantized_gemvs) group_quantized_gemvs(graph, p, cx);
  for (int round = 0; round < cx.fusion_rounds; ++round) {
    std::vector<Candidate> candidates;
    for (const auto& [producer, consumer] : producer_consumer_pairs(graph, p)) {
      const MergeDecision d = legal_merge(graph, p, producer, consumer, cx.max_group_nodes);
      if (!d.legal) {
        if (!cx.debug_dir.empty())
          cx.log.push_back("round " + std::to_string(round) + " reject " + describe(graph, p, producer) + " -> " +
                           describe(graph, p, consumer) + ": " + d.reason);
        continue;
      }
      candidates.push_back({merge_score(graph, p, producer, consumer), producer, consumer});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    bool merged = false;
    for (const Candidate& c : candidates) {
      // Earlier merges this round may have changed either group: decide again.
      const MergeDecision d = legal_merge(graph, p, c.producer, c.consumer, cx.max_group_nodes);
      if (!d.legal) continue;
      if (!cx.debug_dir.empty())
        cx.log.push_back("round " + std::to_string(round) + " accept " + describe(graph, p, c.producer) + " -> " +
                         describe(graph, p, c.consumer) + " score " + std::to_string(static_cast<int64_t>(c.score)) +
                         ": " + d.reason);
      merge(p, c.producer, c.consumer, d);
      merged = true;
    }
    if (!merged) break;
  }
  return p;
}

}  // namespace luminal::passes
