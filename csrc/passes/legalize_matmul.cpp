#include "passes/legalize_matmul.h"

#include <algorithm>

namespace luminal::passes {

namespace {

// Both operands read K with unit stride (a Linear's weight is [N, K] row-major), or K is 1.
bool reads_k_with_unit_strides(const ir::Node& matmul) {
  const size_t rank = matmul.shape.size();
  const ir::View& a = matmul.inputs[0].view;
  const ir::View& b = matmul.inputs[1].view;
  return is_one(a.shape()[rank - 1]) || (is_one(a.strides()[rank - 1]) && is_one(b.strides()[rank - 2]));
}

// The weight repeats over a batch dim: a GEMV would stream it once per index of that dim, where
// sgemm folds the dim into M.
bool weight_repeats_over_batch(const ir::Node& matmul) {
  const ir::View& b = matmul.inputs[1].view;
  for (size_t d = 0; d + 2 < matmul.shape.size(); ++d)
    if (is_zero(b.strides()[d]) && !is_one(b.shape()[d])) return true;
  return false;
}

// A rank-2 bf16 Matmul of bf16 operands that both read K with unit stride: the form the bf16
// pairs multiply (lm_gemv_bf16_strips), whatever its M.
bool is_bf16_pair_product(const ir::Graph& graph, const ir::Node& matmul) {
  if (matmul.op != ir::Op::Matmul || matmul.dtype != ir::DType::BF16 || matmul.shape.size() != 2) return false;
  for (const ir::TensorRef& in : matmul.inputs)
    if (graph.node(in.node).dtype != ir::DType::BF16) return false;
  return reads_k_with_unit_strides(matmul);
}

}  // namespace

bool is_bf16_pair_gemv(const ir::Graph& graph, const ir::Node& matmul, int64_t bf16_pair_rows) {
  if (!is_bf16_pair_product(graph, matmul)) return false;
  const ir::Expr& m = matmul.shape[0];
  return m.is_constant() && m.constant_value() > 1 && m.constant_value() <= bf16_pair_rows;
}

bool is_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows) {
  if (matmul.op != ir::Op::Matmul) return false;
  if (is_bf16_pair_gemv(graph, matmul, rows.bf16_pairs)) return true;
  // int8 or uint8 activations (torchao's two forms of _int_mm) times int8 weights.
  const ir::DType a = graph.node(matmul.inputs[0].node).dtype;
  const bool int8_product = matmul.dtype == ir::DType::I32 && (a == ir::DType::I8 || a == ir::DType::U8) &&
                            graph.node(matmul.inputs[1].node).dtype == ir::DType::I8;
  if (matmul.dtype != ir::DType::F32 && matmul.dtype != ir::DType::F16 && matmul.dtype != ir::DType::BF16 &&
      !int8_product)
    return false;
  const size_t rank = matmul.shape.size();
  // An int8 product of any M: one GEMV per row of `a` (BLAS has no exact int8 product; the
  // weight stays in cache between rows at a prefill's sizes). So are a few half-precision rows
  // where the caller allows them (no widened copy of the weight), and a few f32 rows (sgemm
  // would first pack the whole weight, another pass over it), and a few bf16 rows times an int8
  // weight (torchao's weight-only int8, passes/quantized_weights.h), packed into strips, the
  // weight read as int8 (rank 2, the strips' form).
  const ir::Expr& m = matmul.shape[rank - 2];
  const bool quantized_bf16 = matmul.dtype == ir::DType::BF16 && rank == 2 &&
                              graph.node(matmul.inputs[1].node).dtype == ir::DType::I8;
  const bool f32_strips = matmul.dtype == ir::DType::F32 || quantized_bf16;
  const ir::Expr& depth = matmul.inputs[0].view.shape()[rank - 1];
  const bool quantized_f32 =
      matmul.dtype == ir::DType::F32 && graph.node(matmul.inputs[1].node).dtype == ir::DType::I8;
  const int64_t known_depth = depth.is_constant() ? depth.constant_value() : 0;
  const int64_t few_rows = quantized_bf16                  ? rows.quantized_bf16
                           : quantized_f32                  ? rows.quantized_f32
                           : matmul.dtype == ir::DType::F32 ? rows.f32_rows(known_depth)
                           : ir::is_half(matmul.dtype)      ? rows.half
                                                            : 1;
  const bool few =
      m.is_constant() && m.constant_value() <= few_rows && (!f32_strips || !weight_repeats_over_batch(matmul));
  return (is_one(m) || int8_product || few) && reads_k_with_unit_strides(matmul);
}

bool is_gemv_for_few_rows(const ir::Graph& graph, const ir::Node& matmul, int64_t bf16_pair_rows) {
  if (bf16_pair_rows > 1 && is_bf16_pair_product(graph, matmul) && !matmul.shape[0].is_constant()) return true;
  return matmul.op == ir::Op::Matmul && matmul.dtype == ir::DType::F32 &&
         graph.node(matmul.inputs[0].node).dtype == ir::DType::F32 &&
         graph.node(matmul.inputs[1].node).dtype == ir::DType::F32 &&
         !matmul.shape[matmul.shape.size() - 2].is_constant() && !weight_repeats_over_batch(matmul) &&
         reads_k_with_unit_strides(matmul);
}

bool is_expert_gemv(const ir::Graph& graph, const ir::Node& grouped_matmul, int64_t bf16_pair_rows) {
  const ir::DType dtype = grouped_matmul.dtype;
  if (grouped_matmul.op != ir::Op::GroupedMatmul ||
      (dtype != ir::DType::F32 && (dtype != ir::DType::BF16 || bf16_pair_rows <= 1)))
    return false;
  for (int i : {0, 1})
    if (graph.node(grouped_matmul.inputs[i].node).dtype != dtype) return false;
  // a [S, K] and b [G, K, N]
  return is_one(grouped_matmul.inputs[0].view.strides()[1]) && is_one(grouped_matmul.inputs[1].view.strides()[1]);
}

bool is_column_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows) {
  const bool f32 = matmul.dtype == ir::DType::F32;
  if (matmul.op != ir::Op::Matmul || !(ir::is_half(matmul.dtype) || f32)) return false;
  for (const ir::TensorRef& in : matmul.inputs)
    if (graph.node(in.node).dtype != matmul.dtype) return false;
  const size_t rank = matmul.shape.size();
  if (!is_one(matmul.inputs[1].view.strides()[rank - 1])) return false;
  // One f32 row is sgemv's, which streams the weight as this kernel would.
  if (is_one(matmul.shape[rank - 2])) return !f32;
  // A prompt's few rows: each row of `a` read along K (two values at a time as bf16 pairs).
  const ir::Expr& m = matmul.shape[0];
  const int64_t most_rows = f32 ? rows.f32_columns : matmul.dtype == ir::DType::BF16 ? rows.bf16_pair_columns : 1;
  return rank == 2 && m.is_constant() && m.constant_value() <= most_rows && is_one(matmul.inputs[0].view.strides()[1]);
}

bool is_any_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows) {
  return is_gemv(graph, matmul, rows) || is_column_gemv(graph, matmul, rows);
}

ir::Graph legalize_matmul(ir::Graph graph, const std::vector<ir::DType>& native_half, const GemvRows& rows) {
  ir::Graph out;
  std::vector<ir::NodeId> renumber(graph.size(), -1);
  for (size_t i = 0; i < graph.size(); ++i) {
    ir::Node node = graph.node(static_cast<ir::NodeId>(i));
    for (ir::TensorRef& in : node.inputs) in.node = renumber[in.node];
    const bool native = std::find(native_half.begin(), native_half.end(), node.dtype) != native_half.end();
    if (node.op != ir::Op::Matmul || !ir::is_half(node.dtype) ||
        is_any_gemv(out, node, rows) || native) {
      renumber[i] = out.add(std::move(node));
      continue;
    }
    const ir::DType half = node.dtype;
    // A view that reads as many elements as its source holds (a Linear's transposed weight) is
    // widened in the source's own order and read through the same view: casting it through the
    // view instead would be a strided transpose, the slowest pass of a bf16 prefill.
    auto widen = [&](const ir::TensorRef& in) {
      const ir::Shape& source_shape = out.node(in.node).shape;
      const bool whole_source = ir::numel(source_shape) == ir::numel(in.view.shape());
      ir::Node cast;
      cast.op = ir::Op::Cast;
      cast.dtype = ir::DType::F32;
      cast.shape = whole_source ? source_shape : in.view.shape();
      cast.inputs = {whole_source ? ir::TensorRef{in.node, ir::View::contiguous(source_shape)} : in};
      cast.origin = node.origin;
      const ir::NodeId widened = out.add(std::move(cast));
      return ir::TensorRef{widened, whole_source ? in.view : ir::View::contiguous(in.view.shape())};
    };
    ir::Node matmul = node;
    matmul.dtype = ir::DType::F32;
    matmul.inputs = {widen(node.inputs[0]), widen(node.inputs[1])};
    const ir::NodeId product = out.add(std::move(matmul));
    ir::Node narrow;
    narrow.op = ir::Op::Cast;
    narrow.dtype = half;
    narrow.shape = node.shape;
    narrow.inputs = {ir::TensorRef{product, ir::View::contiguous(node.shape)}};
    narrow.origin = node.origin;
    renumber[i] = out.add(std::move(narrow));
  }
  out.take_program_ends(graph, renumber);
  return out;
}

}  // namespace luminal::passes
