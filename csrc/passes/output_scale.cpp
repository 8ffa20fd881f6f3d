#include "passes/output_scale.h"

namespace luminal::passes {

namespace {

// A buffer that exists before any kernel runs, wherever the GEMV is among them.
bool bound_before_kernels(const ir::Node& node) { return node.op == ir::Op::Weight || node.op == ir::Op::Input; }

// `view` reads every element of a contiguous `shape` buffer at its own position.
bool contiguous_read(const ir::View& view, const ir::Shape& shape) { return view.shape() == shape && view.is_contiguous(); }

}  // namespace

std::optional<OutputScale> output_scale(const ir::Graph& graph, const ir::Node& mul, ir::NodeId product,
                                        const std::vector<std::vector<ir::NodeId>>& users,
                                        const std::vector<bool>& read_by_runtime) {
  const ir::Node& out = graph.node(product);
  if (mul.op != ir::Op::Mul || mul.dtype != out.dtype || !ir::is_floating(mul.dtype) || !(mul.shape == out.shape))
    return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const ir::TensorRef& p = mul.inputs[i];
    const ir::TensorRef& factor = mul.inputs[1 - i];
    if (p.node != product || !contiguous_read(p.view, out.shape) || factor.node == product || !factor.view.is_last_dim_vector())
      continue;
    const ir::Node& source = graph.node(factor.node);
    if (source.dtype != mul.dtype) continue;
    if (bound_before_kernels(source)) return OutputScale{factor, -1};
    // A Cast of a bound buffer read in its own layout: the Mul's view of the Cast reads the same
    // positions of the buffer under it.
    if (source.op != ir::Op::Cast || read_by_runtime[factor.node] || users[factor.node].size() != 1) continue;
    const ir::TensorRef& under = source.inputs[0];
    if (!bound_before_kernels(graph.node(under.node)) || !ir::is_floating(graph.node(under.node).dtype) ||
        !contiguous_read(under.view, source.shape))
      continue;
    return OutputScale{ir::TensorRef{under.node, factor.view}, factor.node};
  }
  return std::nullopt;
}

}  // namespace luminal::passes
