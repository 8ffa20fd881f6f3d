// The optimisation pipeline for generating runtimes: a readable list of passes (pipeline.cpp).
// With PassContext::debug_dir set, the IR after each step is written there, and verify() runs
// between steps.
#pragma once

#include "ir/graph.h"
#include "passes/fusion/partition.h"
#include "passes/pass_context.h"

namespace luminal::passes {

struct KernelPlan {
  ir::Graph graph;      // the optimised graph the partition refers to
  Partition partition;  // which nodes each kernel computes
};

KernelPlan plan_kernels(ir::Graph graph, PassContext& cx);

}  // namespace luminal::passes
