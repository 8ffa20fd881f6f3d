// Fusion driver: from one group per node, merges producer groups into consumer groups while a
// legal merge exists, best score first, for at most PassContext::fusion_rounds rounds. Every
// accept and reject is logged (PassContext::log) with its reason and score.
// Needs: a verified graph. Guarantees: a partition whose groups are convex and lowerable
// (codegen::lower_loop_group accepts every Pointwise/Row group).
#pragma once

#include "ir/graph.h"
#include "passes/fusion/partition.h"
#include "passes/pass_context.h"

namespace luminal::passes {

Partition fuse(const ir::Graph& graph, PassContext& cx);

}  // namespace luminal::passes
