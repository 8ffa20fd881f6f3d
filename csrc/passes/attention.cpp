#include "passes/attention.h"

#include <algorithm>
#include <cmath>

namespace luminal::passes {

namespace {

using ir::NodeId;
using ir::Op;

class Matcher {
 public:
  explicit Matcher(const ir::Graph& graph) : graph_(graph) {}

  // The producer of `ref` when it has op `op` and `ref` reads all of it in its own layout.
  const ir::Node* whole(const ir::TensorRef& ref, Op op) {
    const ir::Node& node = graph_.node(ref.node);
    if (node.op != op || ref.view != ir::View::contiguous(node.shape)) return nullptr;
    nodes_.push_back(ref.node);
    return &node;
  }

  // The producer of `ref` when it is a reduction result [.., 1] with op `op` that `ref`
  // broadcasts along the last axis (a keepdim reduction read by its row).
  const ir::Node* row_broadcast(const ir::TensorRef& ref, Op op) {
    const ir::Node& node = graph_.node(ref.node);
    if (node.op != op || node.shape.empty() || !is_one(node.shape.back())) return nullptr;
    const ir::View own = ir::View::contiguous(node.shape);
    const size_t rank = node.shape.size();
    if (ref.view.rank() != rank || !(ref.view.offset() == own.offset())) return nullptr;
    for (size_t d = 0; d + 1 < rank; ++d)
      if (!(ref.view.shape()[d] == node.shape[d]) || !(ref.view.strides()[d] == own.strides()[d])) return nullptr;
    if (!is_zero(ref.view.strides()[rank - 1])) return nullptr;
    nodes_.push_back(ref.node);
    return &node;
  }

  // The value of a Constant read through any broadcast.
  std::optional<double> constant(const ir::TensorRef& ref) const {
    const ir::Node& node = graph_.node(ref.node);
    if (node.op != Op::Constant) return std::nullopt;
    return node.scalar.as_double();
  }

  // Whether `ref` reads where(r == when, replacement, r), r reducing the whole `row_source` over
  // its last axis (one query's row of scores): safe softmax's guards.
  bool guarded(const ir::TensorRef& ref, Op reduction, double when, double replacement, NodeId row_source) {
    const ir::Node* select = row_broadcast(ref, Op::Where);
    if (select == nullptr) return false;
    const ir::Node* test = whole(select->inputs[0], Op::Eq);
    const std::optional<double> replaced = constant(select->inputs[1]);
    if (test == nullptr || !replaced || *replaced != replacement) return false;
    const std::optional<double> compared = constant(test->inputs[1]);
    if (!compared || !(*compared == when)) return false;
    const ir::Node* reduced = whole(select->inputs[2], reduction);
    return reduced != nullptr && reduced->axis == static_cast<int>(reduced->shape.size()) - 1 &&
           select->inputs[2].node == test->inputs[0].node && reduced->inputs[0].node == row_source &&
           reduced->inputs[0].view == ir::View::contiguous(graph_.node(row_source).shape);
  }

  // The causal mask `ref` is, read over the scores' dims [batch.., L, S]: where(cols <= rows, 0,
  // -inf), cols the key index (plus a constant) and rows the query index (plus a constant or a
  // scalar tensor), as translator/attention.cpp composes is_causal and transformers' masks
  // compare a StaticCache's slots with the cache positions.
  std::optional<CausalMask> causal_mask(const ir::TensorRef& ref) const {
    const ir::Node& select = graph_.node(ref.node);
    if (select.op != Op::Where) return std::nullopt;
    const std::optional<double> kept = constant(select.inputs[1]), masked = constant(select.inputs[2]);
    if (!kept || *kept != 0.0 || !masked || *masked != -INFINITY) return std::nullopt;
    const std::optional<ir::View> test_view = ir::read_through(ref.view, select.inputs[0].view);
    const ir::Node& test = graph_.node(select.inputs[0].node);
    if (!test_view || test.op != Op::Le) return std::nullopt;
    const size_t rank = ref.view.rank();
    const std::optional<CausalMask> cols = shifted_index(*test_view, test.inputs[0], rank - 1);
    const std::optional<CausalMask> rows = shifted_index(*test_view, test.inputs[1], rank - 2);
    if (!cols || cols->shift_tensor || !rows) return std::nullopt;
    // s + c <= l + r: s <= l + (r - c).
    CausalMask mask = *rows;
    mask.shift -= cols->shift;
    return mask;
  }

  std::vector<NodeId>& nodes() { return nodes_; }

 private:
  // Whether `view` reads one element wherever it reads (stride 0 along every dim of extent > 1),
  // and along dim `dim` (when >= 0) steps by one instead.
  static bool steps_along(const ir::View& view, int dim) {
    for (size_t d = 0; d < view.rank(); ++d) {
      const bool along = static_cast<int>(d) == dim;
      if (!(along ? is_one(view.strides()[d]) : is_zero(view.strides()[d])) && !is_one(view.shape()[d])) return false;
    }
    return true;
  }

  // `ref`, read by an op whose output `outer` reads (over the scores' dims), as the index along
  // dim `dim` plus a shift: a rank-1 integer Iota read from offset 0 with stride 1 along that
  // dim and 0 along every other, or such an Iota plus an integer Constant or plus one element
  // of an integer tensor read everywhere (its view then reads that element alone).
  std::optional<CausalMask> shifted_index(const ir::View& outer, const ir::TensorRef& ref, size_t dim) const {
    const ir::Node& node = graph_.node(ref.node);
    const std::optional<ir::View> view = ir::read_through(outer, ref.view);
    if (!view || !ir::is_integral(node.dtype)) return std::nullopt;
    if (node.op == Op::Iota)
      return node.shape.size() == 1 && is_zero(view->offset()) && steps_along(*view, static_cast<int>(dim))
                 ? std::optional<CausalMask>(CausalMask{})
                 : std::nullopt;
    if (node.op != Op::Add) return std::nullopt;
    for (int i : {0, 1}) {
      const ir::TensorRef& index = node.inputs[i];
      const ir::TensorRef& term = node.inputs[1 - i];
      if (graph_.node(index.node).op != Op::Iota) continue;
      std::optional<CausalMask> mask = shifted_index(*view, index, dim);
      const std::optional<ir::View> term_view = ir::read_through(*view, term.view);
      if (!mask || !term_view || !ir::is_integral(graph_.node(term.node).dtype)) continue;
      const ir::Node& term_node = graph_.node(term.node);
      if (term_node.op == Op::Constant) {
        if (!term_node.scalar.is_integer) continue;
        mask->shift = term_node.scalar.integer;
        return mask;
      }
      if (!steps_along(*term_view, -1)) continue;
      mask->shift_tensor = ir::TensorRef{term.node, *term_view};
      return mask;
    }
    return std::nullopt;
  }

  const ir::Graph& graph_;
  std::vector<NodeId> nodes_;
};

}  // namespace

std::vector<NodeId> AttentionPattern::operands() const {
  std::vector<NodeId> read = {q.node, k_transposed.node, v.node};
  if (bias) read.push_back(bias->node);
  if (causal && causal->shift_tensor) read.push_back(causal->shift_tensor->node);
  return read;
}

std::optional<AttentionPattern> match_attention(const ir::Graph& graph, NodeId matmul,
                                                const std::vector<std::vector<NodeId>>& users,
                                                const std::vector<bool>& read_by_runtime, bool half_operands) {
  const ir::Node& out = graph.node(matmul);
  if (out.op != Op::Matmul || out.dtype != ir::DType::F32) return std::nullopt;
  Matcher m(graph);
  const ir::Node* probabilities = m.whole(out.inputs[0], Op::Div);
  if (probabilities == nullptr) return std::nullopt;
  const ir::Node* exps = m.whole(probabilities->inputs[0], Op::Exp);
  if (exps == nullptr || !m.guarded(probabilities->inputs[1], Op::SumReduce, 0.0, 1.0, probabilities->inputs[0].node))
    return std::nullopt;
  const ir::Node* shifted = m.whole(exps->inputs[0], Op::Sub);
  if (shifted == nullptr || !m.guarded(shifted->inputs[1], Op::MaxReduce, -INFINITY, 0.0, shifted->inputs[0].node))
    return std::nullopt;

  AttentionPattern pattern;
  const ir::TensorRef& x = shifted->inputs[0];
  if (x.view != ir::View::contiguous(graph.node(x.node).shape)) return std::nullopt;
  const ir::Node* scores = &graph.node(x.node);
  if (scores->op == Op::Add) {
    pattern.bias = scores->inputs[1];
    scores = m.whole(scores->inputs[0], Op::Mul);
    m.nodes().push_back(x.node);
  } else {
    scores = m.whole(x, Op::Mul);
  }
  if (scores == nullptr) return std::nullopt;
  const std::optional<double> scale = m.constant(scores->inputs[1]);
  const ir::Node* product = m.whole(scores->inputs[0], Op::Matmul);
  if (!scale || product == nullptr || product->dtype != ir::DType::F32) return std::nullopt;
  pattern.scale = *scale;
  pattern.q = product->inputs[0];
  pattern.k_transposed = product->inputs[1];
  pattern.v = out.inputs[1];
  pattern.out = matmul;
  if (half_operands) {
    // A widening cast that only the pattern's products read: they read its input through the
    // product's view of the cast composed with the cast's own view of its input. That view is
    // often a slice: a StaticCache's K and V are the filled rows of the cache buffer, and while
    // only a contiguous input was read in place, their casts ran as kernels of their own and the
    // attention read f32 copies (a bf16 prompt's attention could not round its probabilities to
    // bf16 for pairs or AMX tiles; docs/lessons.md, 2026-12-06).
    const NodeId product_id = scores->inputs[0].node;
    for (ir::TensorRef* operand : {&pattern.q, &pattern.k_transposed, &pattern.v}) {
      const ir::Node& cast = graph.node(operand->node);
      if (cast.op != Op::Cast || cast.dtype != ir::DType::F32 || read_by_runtime[operand->node]) continue;
      const ir::TensorRef& source = cast.inputs[0];
      const ir::DType from = graph.node(source.node).dtype;
      if ((from != ir::DType::BF16 && from != ir::DType::F16) || source.view.shape() != cast.shape) continue;
      const std::optional<ir::View> view = ir::read_through(operand->view, source.view);
      if (!view) continue;
      const std::vector<NodeId>& readers = users[operand->node];
      if (!std::all_of(readers.begin(), readers.end(), [&](NodeId u) { return u == product_id || u == matmul; }))
        continue;
      m.nodes().push_back(operand->node);
      *operand = ir::TensorRef{source.node, *view};
    }
  }

  std::vector<NodeId>& nodes = m.nodes();
  nodes.push_back(matmul);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  // Skipping the intermediates is only sound when nothing else reads them.
  for (NodeId id : nodes) {
    if (id == matmul) continue;
    if (read_by_runtime[id]) return std::nullopt;
    for (NodeId user : users[id])
      if (!std::binary_search(nodes.begin(), nodes.end(), user)) return std::nullopt;
  }
  if (pattern.bias && std::binary_search(nodes.begin(), nodes.end(), pattern.bias->node)) return std::nullopt;
  // A causal mask added by this pattern alone is computed by its kernel from the query and key
  // indices: its Where joins the pattern. What the Where read (the comparison, the shifted
  // indices) stays in the graph; fusion drops it where no kernel reads it (fuse.h). Read
  // elsewhere too, the Where stays a bias the kernel reads.
  if (pattern.bias && !read_by_runtime[pattern.bias->node] && users[pattern.bias->node] == std::vector<NodeId>{x.node})
    if (const std::optional<CausalMask> mask = m.causal_mask(*pattern.bias)) {
      nodes.insert(std::upper_bound(nodes.begin(), nodes.end(), pattern.bias->node), pattern.bias->node);
      pattern.bias.reset();
      pattern.causal = mask;
    }
  pattern.nodes = nodes;
  return pattern;
}

}  // namespace luminal::passes
