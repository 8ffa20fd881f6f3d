#include "passes/quantized_weights.h"

#include <optional>

#include "passes/legalize_matmul.h"

namespace luminal::passes {

namespace {

// The int8 tensor `ref` reads through a Cast to `dtype`, as a read of the int8 tensor itself: the
// Cast's own read when `ref` reads the Cast whole (torchao casts the transposed weight), or
// `ref`'s view when the Cast widens its input whole, in its layout (a weight cast, then
// transposed).
std::optional<ir::TensorRef> widened_int8(const ir::Graph& graph, const ir::TensorRef& ref, ir::DType dtype) {
  const ir::Node& cast = graph.node(ref.node);
  if (cast.op != ir::Op::Cast || cast.dtype != dtype || graph.node(cast.inputs[0].node).dtype != ir::DType::I8)
    return std::nullopt;
  const ir::View whole = ir::View::contiguous(cast.shape);
  if (ref.view == whole) return cast.inputs[0];
  if (cast.inputs[0].view == whole) return ir::TensorRef{cast.inputs[0].node, ref.view};
  return std::nullopt;
}

// A prefill keeps the Cast, whose input view is a Linear weight transposed: written in that
// order, the Cast reads the weight across its rows. Cast in the weight's own layout instead
// (contiguous reads and writes) and let the Matmul read the Cast through the transposing view,
// as BLAS reads a transposed operand at no cost. Only for a Cast nothing else reads and a view
// that covers the int8 buffer exactly once (a permutation).
void cast_in_weight_layout(ir::Graph& graph, ir::NodeId matmul, const std::vector<int>& readers) {
  const ir::TensorRef& b = graph.node(matmul).inputs[1];
  const ir::NodeId cast_id = b.node;
  const ir::Node& cast = graph.node(cast_id);
  const ir::TensorRef& weight = cast.inputs[0];
  const ir::Shape& stored = graph.node(weight.node).shape;
  if (readers[cast_id] != 1 || weight.view.is_contiguous() || !(ir::numel(stored) == ir::numel(cast.shape)) ||
      !ir::is_zero(weight.view.offset()))
    return;
  for (const ir::Expr& stride : weight.view.strides())
    if (!stride.is_constant()) return;
  ir::View through = weight.view;
  ir::Node widened = cast;
  widened.shape = stored;
  widened.inputs[0].view = ir::View::contiguous(stored);
  graph.mutable_node(cast_id) = std::move(widened);
  graph.mutable_node(matmul).inputs[1].view = std::move(through);
}

}  // namespace

ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph, int64_t f32_rows) {
  std::vector<int> readers(graph.size(), 0);
  for (const ir::Node& node : graph.nodes())
    for (const ir::TensorRef& in : node.inputs) ++readers[in.node];
  for (const ir::TensorRef& output : graph.outputs()) ++readers[output.node];
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.op != ir::Op::Matmul) continue;
    ir::Node folded = node;
    if (node.dtype == ir::DType::F32 || node.dtype == ir::DType::BF16) {
      // Weight-only: the weight widened to the activations' dtype.
      const std::optional<ir::TensorRef> weight = widened_int8(graph, node.inputs[1], node.dtype);
      if (!weight) continue;
      folded.inputs[1] = *weight;
      if (!is_gemv(graph, folded, 1, f32_rows)) {
        cast_in_weight_layout(graph, static_cast<ir::NodeId>(i), readers);
        continue;
      }
    } else if (node.dtype == ir::DType::I32) {
      // Dynamic activations (aten::_int_mm): both operands int8, widened to i32.
      const std::optional<ir::TensorRef> a = widened_int8(graph, node.inputs[0], node.dtype);
      const std::optional<ir::TensorRef> weight = widened_int8(graph, node.inputs[1], node.dtype);
      if (!a || !weight) continue;
      folded.inputs = {*a, *weight};
    } else {
      continue;
    }
    if (!is_gemv(graph, folded, 1, f32_rows)) continue;
    graph.mutable_node(static_cast<ir::NodeId>(i)) = std::move(folded);
  }
  return graph;
}

}  // namespace luminal::passes
