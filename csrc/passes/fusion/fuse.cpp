#include "passes/fusion/fuse.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "passes/fusion/legal.h"
#include "passes/fusion/score.h"

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

}  // namespace

Partition fuse(const ir::Graph& graph, PassContext& cx) {
  Partition p = initial_partition(graph);
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
