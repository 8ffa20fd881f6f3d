// A partition of the graph's nodes into kernels: what fusion decides and codegen lowers.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace luminal::passes {

enum class GroupKind {
  Source,     // Input / Weight: bound by the runtime, no kernel
  Inlined,    // Constant / Iota folded into every reader: no kernel, no buffer
  Pointwise,  // elementwise ops (and Gather) over one shape
  Row,        // reductions over one axis with their elementwise prologue and epilogue
  Matmul,     // one contraction (BLAS, or a generated GEMV / integer loop)
  GroupedMatmul,  // one BLAS product per expert, the groups read at run time
  Scatter,
  AtenCall,   // one op through the ATen fallback: never fused (a partition boundary)
  Collective,  // one collective over a process group, issued asynchronously: never fused
  Attention,  // scaled dot-product attention as one pattern kernel (passes/attention.h)
  QuantizedGemv,  // a GEMV dequantizing its weight per group in registers (passes/group_quantized_gemv.h)
  Scan,       // one CumSum as the scan pattern kernel: never fused
};

const char* group_kind_name(GroupKind kind);

struct Group {
  GroupKind kind = GroupKind::Pointwise;
  std::vector<ir::NodeId> nodes;  // ascending (topological)
  ir::Shape domain;               // Pointwise: the nodes' shape; Row: the reduced input's shape
  int reduce_axis = -1;           // Row only
  bool alive = true;              // false once merged into another group
};

struct Partition {
  std::vector<Group> groups;
  std::vector<int> group_of;  // by node; -1 for Inlined sources
  // users[n]: the nodes reading node n (a node reading twice appears twice), and the nodes whose
  // shape or views mention a data symbol whose value n holds: those must run after n too.
  std::vector<std::vector<ir::NodeId>> users;
  // symbol_readers[n]: the second kind of users[n] only. A kernel cannot both compute a data
  // symbol's value and loop over a size that mentions it.
  std::vector<std::vector<ir::NodeId>> symbol_readers;
  // The runtime reads the node's buffer after the kernels: a graph output or a data symbol's value.
  std::vector<bool> read_by_runtime;
};

// One group per node. Constant/Iota are Inlined unless something needs their buffer (a graph
// output, a Matmul, Scatter or scan operand, a Gather's data).
Partition initial_partition(const ir::Graph& graph);

// Live groups in an order where every group follows the groups it reads and the groups holding
// the values of the data symbols it mentions. Among the groups ready at a point, collectives go
// first and the readers of a collective's result last, so that the compute that does not need
// a collective runs while it is in flight.
std::vector<int> topological_groups(const Partition& partition);

// Nodes of a group that something outside it reads (another group or a graph output).
std::vector<ir::NodeId> stored_nodes(const ir::Graph& graph, const Partition& partition, int group);

std::string partition_to_text(const ir::Graph& graph, const Partition& partition);

}  // namespace luminal::passes
