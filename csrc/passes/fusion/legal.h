// Fusion legality: may group `producer` be merged into group `consumer`? Pure: reads the graph
// and partition, decides, explains. Exhaustively unit-tested (tests/cpp/test_fusion.cpp).
//
// Legal when (1) both are Pointwise or Row groups; (2) their domains agree: equal pointwise
// shapes, or a Row (S, axis) with pointwise work over S (a prologue/epilogue) or over S with the
// axis at size 1 (per-row work), or two Rows over the same S and axis; (3) every edge between
// them is readable inside one loop nest: an identity view of a same-shaped value, or a per-row
// value broadcast along the reduce axis (stride 0); a Gather's data is never fused; (4) the
// union stays convex: no path between them leaves the union (the merged kernel could not be
// scheduled); (5) the union stays below PassContext::max_group_nodes; (6) neither group computes
// a data symbol's value that the other's sizes mention (the kernel would need it before its end).
#pragma once

#include <string>

#include "ir/graph.h"
#include "passes/fusion/partition.h"

namespace luminal::passes {

struct MergeDecision {
  bool legal = false;
  std::string reason;  // why not, or what the merged kernel is
  GroupKind kind = GroupKind::Pointwise;
  ir::Shape domain;
  int reduce_axis = -1;
};

MergeDecision legal_merge(const ir::Graph& graph, const Partition& partition, int producer, int consumer,
                          size_t max_group_nodes);

}  // namespace luminal::passes
