#include "common/error.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

Kernel select_kernel(const ir::Graph& graph, const ir::Node& node) {
  using ir::Op;
  switch (node.op) {
    case Op::Input:
    case Op::Weight: INTERNAL_ERROR() << "sources bound by the executable have no kernel"; break;
    case Op::Constant:
    case Op::Iota: return source_kernel(node);
    case Op::Matmul: return matmul_kernel(graph, node);
    case Op::GroupedMatmul: return grouped_matmul_kernel(graph, node);
    case Op::Gather: return gather_kernel(graph, node);
    case Op::Scatter: return scatter_kernel(graph, node);
    case Op::AtenCall: return aten_call_kernel(graph, node);
    case Op::Collective: return collective_kernel(node);
    default: break;
  }
  if (ir::op_has(node.op, ir::kElementwise)) return elementwise_kernel(graph, node);
  if (ir::op_has(node.op, ir::kReduction)) return reduce_kernel(graph, node);
  if (ir::op_has(node.op, ir::kScan)) return scan_kernel(graph, node);
  UNSUPPORTED_ERROR() << "the reference runtime has no kernel for " << ir::op_name(node.op);
  return nullptr;
}

}  // namespace luminal::runtime::reference
