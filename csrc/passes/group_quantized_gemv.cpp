#include "passes/group_quantized_gemv.h"

#include <algorithm>

namespace luminal::passes {

namespace {

using ir::Expr;
using ir::Node;
using ir::NodeId;
using ir::Op;

bool constant(const Expr& e, int64_t value) { return e.is_constant() && e.constant_value() == value; }

// A Cast from int8 to `dtype` that reads its input contiguously (a reshape of it), so that a
// position in the Cast's buffer is the same position in the int8 one.
bool is_widened_int8(const ir::Graph& graph, const Node& cast, ir::DType dtype) {
  return cast.op == Op::Cast && cast.dtype == dtype && graph.node(cast.inputs[0].node).dtype == ir::DType::I8 &&
         cast.inputs[0].view == ir::View::contiguous(cast.shape);
}

// A [N, G, group] read of a per-group [N, G(, 1)] operand: stride 0 along the group.
std::optional<GroupOperand> per_group(const ir::TensorRef& ref) {
  const ir::View& v = ref.view;
  if (v.rank() != 3 || !ir::is_zero(v.strides()[2])) return std::nullopt;
  return GroupOperand{ref.node, v.offset(), v.strides()[0], v.strides()[1]};
}

}  // namespace

std::optional<GroupQuantizedGemv> match_group_quantized_gemv(const ir::Graph& graph, NodeId matmul,
                                                             const std::vector<std::vector<NodeId>>& users,
                                                             const std::vector<bool>& read_by_runtime,
                                                             const GemvRows& gemv_rows) {
  const Node& mm = graph.node(matmul);
  const ir::DType t = mm.dtype;
  if (mm.op != Op::Matmul || mm.shape.size() != 2 || !mm.shape[0].is_constant()) return std::nullopt;
  if (t != ir::DType::F32 && t != ir::DType::BF16) return std::nullopt;
  const int64_t rows = mm.shape[0].constant_value();
  if (rows < 1 || rows > (t == ir::DType::BF16 ? gemv_rows.quantized_bf16 : gemv_rows.quantized_f32)) return std::nullopt;
  const ir::View& a = mm.inputs[0].view;
  if (!constant(a.strides()[1], 1) && !constant(a.shape()[1], 1)) return std::nullopt;

  // Only read by the pattern: skipping these nodes' buffers changes nothing else.
  auto private_to = [&](NodeId id, NodeId reader) {
    return !read_by_runtime[id] && users[id].size() == 1 && users[id][0] == reader;
  };
  const ir::TensorRef& b = mm.inputs[1];
  const Node& dequantized = graph.node(b.node);
  if (dequantized.op != Op::Mul || dequantized.dtype != t || dequantized.shape.size() != 3) return std::nullopt;
  if (!private_to(b.node, matmul)) return std::nullopt;
  const Expr& groups = dequantized.shape[1];
  const Expr& group = dequantized.shape[2];
  if (!groups.is_constant() || !group.is_constant()) return std::nullopt;
  const int64_t depth = groups.constant_value() * group.constant_value();
  // The Matmul reads W^T: element (k, n) at n * K + k, W read whole.
  if (!ir::is_zero(b.view.offset()) || !constant(b.view.shape()[0], depth) || !constant(b.view.strides()[0], 1) ||
      !constant(b.view.strides()[1], depth) || !(b.view.shape()[1] == dequantized.shape[0]))
    return std::nullopt;

  GroupQuantizedGemv out;
  out.out = matmul;
  out.a = mm.inputs[0];
  out.group = group.constant_value();
  // Mul(values, scale) in either order; values read whole.
  const ir::View whole = ir::View::contiguous(dequantized.shape);
  int values_side = -1;
  for (int side = 0; side < 2; ++side)
    if (dequantized.inputs[side].view == whole && graph.node(dequantized.inputs[1 - side].node).dtype == t &&
        per_group(dequantized.inputs[1 - side]))
      values_side = side;
  if (values_side < 0) return std::nullopt;
  out.scale = *per_group(dequantized.inputs[1 - values_side]);
  const NodeId values = dequantized.inputs[values_side].node;
  if (!private_to(values, b.node)) return std::nullopt;
  NodeId widened = values;
  const Node& v = graph.node(values);
  if (v.op == Op::Sub) {
    const ir::TensorRef& zero = v.inputs[1];
    const std::optional<GroupOperand> zero_read = per_group(zero);
    const Node& zero_cast = graph.node(zero.node);
    if (v.inputs[0].view != whole || !zero_read || !is_widened_int8(graph, zero_cast, t) ||
        !private_to(zero.node, values))
      return std::nullopt;
    // The Cast reads the int8 zero points in its own layout: the same positions.
    out.zero = GroupOperand{zero_cast.inputs[0].node, zero_read->offset, zero_read->row_stride, zero_read->group_stride};
    widened = v.inputs[0].node;
    out.nodes.push_back(zero.node);
  }
  const Node& q = graph.node(widened);
  if (!is_widened_int8(graph, q, t) || !private_to(widened, widened == values ? b.node : values)) return std::nullopt;
  out.weight = q.inputs[0].node;
  out.nodes.push_back(widened);
  if (widened != values) out.nodes.push_back(values);
  out.nodes.push_back(b.node);
  out.nodes.push_back(matmul);
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

}  // namespace luminal::passes
