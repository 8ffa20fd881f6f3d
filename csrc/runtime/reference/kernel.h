// The reference runtime's per-node computations. A Kernel is chosen once per node at compile
// time (which also rejects op/dtype pairs the IR does not define) and called once per run with
// the node's inputs evaluated to concrete layouts.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/strided.h"

namespace luminal::runtime::reference {

// One input edge for this run: the producer's buffer read through a concrete layout.
struct Operand {
  const std::byte* data = nullptr;
  ir::DType dtype = ir::DType::F32;
  Layout layout;
};

struct KernelCall {
  const ir::Node& node;
  std::vector<int64_t> shape;    // the node's shape for this run
  std::vector<Operand> inputs;   // in the order of Node::inputs
  std::byte* output = nullptr;   // contiguous, of the node's dtype and shape
  const ir::SymbolBindings* bindings = nullptr;  // this run's symbol values (AtenCall's SymInt args)
};

using Kernel = std::function<void(const KernelCall&)>;

// Throws UnsupportedError for an op/dtype pair no kernel computes. Input and Weight nodes have
// no kernel: the executable binds their buffers.
Kernel select_kernel(const ir::Graph& graph, const ir::Node& node);

// The families select_kernel dispatches to, one file each.
Kernel source_kernel(const ir::Node& node);  // Constant, Iota
Kernel elementwise_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel reduce_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel matmul_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel grouped_matmul_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel gather_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel scatter_kernel(const ir::Graph& graph, const ir::Node& node);
Kernel scan_kernel(const ir::Graph& graph, const ir::Node& node);  // CumSum
Kernel aten_call_kernel(const ir::Graph& graph, const ir::Node& node);  // through the ATen fallback
Kernel collective_kernel(const ir::Node& node);  // through torch.distributed (runtime/collectives.h)

}  // namespace luminal::runtime::reference
