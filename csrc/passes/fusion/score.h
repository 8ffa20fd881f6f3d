// Fusion profitability: the memory traffic a merge saves, in bytes at a representative size
// (symbolic dims evaluated at 128). A tunable heuristic; legality is decided elsewhere.
#pragma once

#include "ir/graph.h"
#include "passes/fusion/partition.h"

namespace luminal::passes {

double merge_score(const ir::Graph& graph, const Partition& partition, int producer, int consumer);

}  // namespace luminal::passes
