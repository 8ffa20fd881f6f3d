#include "passes/quantized_weights.h"

#include <optional>

#include "passes/legalize_matmul.h"

namespace luminal::passes {

namespace {

// `ref` reads its node whole, in its layout.
bool whole(const ir::Graph& graph, const ir::TensorRef& ref) {
  return ref.view == ir::View::contiguous(graph.node(ref.node).shape);
}

// The `source` (int8 or uint8) tensor `ref` reads through a Cast to `dtype`, as a read of the
// 8-bit tensor itself: the Cast's own read when `ref` reads the Cast whole (torchao casts the
// transposed weight), or `ref`'s view when the Cast widens its input whole, in its layout (a
// weight cast, then transposed).
std::optional<ir::TensorRef> widened_int8(const ir::Graph& graph, const ir::TensorRef& ref, ir::DType dtype,
                                          ir::DType source = ir::DType::I8) {
  const ir::Node& cast = graph.node(ref.node);
  if (cast.op != ir::Op::Cast || cast.dtype != dtype || graph.node(cast.inputs[0].node).dtype != source)
    return std::nullopt;
  if (whole(graph, ref)) return cast.inputs[0];
  if (cast.inputs[0].view == ir::View::contiguous(cast.shape)) return ir::TensorRef{cast.inputs[0].node, ref.view};
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

bool is_integer_constant(const ir::Graph& graph, const ir::TensorRef& ref, int64_t value) {
  const ir::Node& node = graph.node(ref.node);
  return node.op == ir::Op::Constant && node.scalar.is_integer && node.scalar.integer == value;
}

// The [M, K] int8 activations x that `a` (an operand of an i32 Matmul) widens as uint8: Cast i32
// of Cast u8 of (Cast i32 of x) + 128, each read whole; x + 128 of an int8 x is within uint8, so
// the Cast to u8 is exact. nullopt for any other form.
std::optional<ir::NodeId> offset_int8(const ir::Graph& graph, const ir::TensorRef& a) {
  const ir::Node& widened = graph.node(a.node);
  if (widened.op != ir::Op::Cast || widened.dtype != ir::DType::I32 || !whole(graph, widened.inputs[0])) return {};
  const ir::Node& unsigned_bytes = graph.node(widened.inputs[0].node);
  if (unsigned_bytes.op != ir::Op::Cast || unsigned_bytes.dtype != ir::DType::U8 ||
      !whole(graph, unsigned_bytes.inputs[0]))
    return {};
  const ir::Node& add = graph.node(unsigned_bytes.inputs[0].node);
  if (add.op != ir::Op::Add || add.dtype != ir::DType::I32) return {};
  for (int side = 0; side < 2; ++side) {
    const ir::TensorRef& x = add.inputs[side];
    const ir::Node& x_node = graph.node(x.node);
    if (is_integer_constant(graph, add.inputs[1 - side], 128) && whole(graph, x) && x_node.op == ir::Op::Cast &&
        x_node.dtype == ir::DType::I32 && graph.node(x_node.inputs[0].node).dtype == ir::DType::I8)
      return x.node;
  }
  return {};
}

// `correction` is 128 times the column sums of the weight that the [M, K] x [K, N] Matmul
// `product` reads, broadcast over its M rows: Mul(SumReduce over K of the weight as the Matmul
// widens it, 128).
bool is_offset_correction(const ir::Graph& graph, const ir::TensorRef& correction, const ir::Node& product) {
  const ir::Node& mul = graph.node(correction.node);
  const ir::View& view = correction.view;
  if (mul.op != ir::Op::Mul || mul.dtype != ir::DType::I32 || mul.shape.size() != 2 || !is_one(mul.shape[0]) ||
      view.shape() != product.shape || !is_one(view.strides()[1]) || !is_zero(view.offset()) ||
      !(is_zero(view.strides()[0]) || is_one(view.shape()[0])))
    return false;
  for (int side = 0; side < 2; ++side) {
    if (!is_integer_constant(graph, mul.inputs[1 - side], 128) || !whole(graph, mul.inputs[side])) continue;
    const ir::Node& sum = graph.node(mul.inputs[side].node);
    if (sum.op != ir::Op::SumReduce || sum.dtype != ir::DType::I32 || sum.axis != 0 || !whole(graph, sum.inputs[0]))
      continue;
    // The summed weight and the multiplied one: the same int8 elements widened to i32.
    const ir::Node& summed = graph.node(sum.inputs[0].node);
    const ir::Node& multiplied = graph.node(product.inputs[1].node);
    if (summed.op == ir::Op::Cast && multiplied.op == ir::Op::Cast && summed.dtype == ir::DType::I32 &&
        multiplied.dtype == ir::DType::I32 && whole(graph, product.inputs[1]) &&
        summed.inputs[0].node == multiplied.inputs[0].node && summed.inputs[0].view == multiplied.inputs[0].view &&
        graph.node(summed.inputs[0].node).dtype == ir::DType::I8)
      return true;
  }
  return false;
}

}  // namespace

ir::Graph fold_unsigned_activation_offset(ir::Graph graph) {
  for (size_t i = 0; i < graph.size(); ++i) {
    const ir::Node& sub = graph.node(static_cast<ir::NodeId>(i));
    if (sub.op != ir::Op::Sub || sub.dtype != ir::DType::I32 || sub.shape.size() != 2 ||
        !whole(graph, sub.inputs[0]))
      continue;
    const ir::Node& product = graph.node(sub.inputs[0].node);
    if (product.op != ir::Op::Matmul || product.dtype != ir::DType::I32 || product.shape.size() != 2) continue;
    const std::optional<ir::NodeId> x = offset_int8(graph, product.inputs[0]);
    if (!x || !is_offset_correction(graph, sub.inputs[1], product)) continue;
    ir::Node folded = product;
    folded.inputs[0] = ir::TensorRef{*x, product.inputs[0].view};
    graph.mutable_node(static_cast<ir::NodeId>(i)) = std::move(folded);
  }
  return graph;
}

ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph, const GemvRows& rows) {
  graph = fold_unsigned_activation_offset(std::move(graph));
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
      if (!is_gemv(graph, folded, rows)) {
        cast_in_weight_layout(graph, static_cast<ir::NodeId>(i), readers);
        continue;
      }
    } else if (node.dtype == ir::DType::I32) {
      // Dynamic activations (aten::_int_mm): int8 weights, int8 or uint8 activations, widened to i32.
      std::optional<ir::TensorRef> a = widened_int8(graph, node.inputs[0], node.dtype);
      if (!a) a = widened_int8(graph, node.inputs[0], node.dtype, ir::DType::U8);
      const std::optional<ir::TensorRef> weight = widened_int8(graph, node.inputs[1], node.dtype);
      if (!a || !weight) continue;
      folded.inputs = {*a, *weight};
    } else {
      continue;
    }
    if (!is_gemv(graph, folded, rows)) continue;
    graph.mutable_node(static_cast<ir::NodeId>(i)) = std::move(folded);
  }
  return graph;
}

}  // namespace luminal::passes
