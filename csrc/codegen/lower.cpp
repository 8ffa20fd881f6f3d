#include "codegen/lower.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "passes/legalize_matmul.h"

namespace luminal::codegen {

namespace {

using ir::DType;
using ir::Expr;
using ir::NodeId;
using ir::Op;

// `strides` (one per leading dim of `domain`) with 0 where the domain's dim is 1: such a dim's
// index is always 0, and a 0 stride lets the emitter leave it out.
std::vector<Expr> zero_unit_dims(const ir::Shape& domain, std::vector<Expr> strides) {
  for (size_t d = 0; d < strides.size(); ++d)
    if (is_one(domain[d])) strides[d] = Expr(int64_t{0});
  return strides;
}

// An IotaAt's value (o / divisor) % extent ignores whole periods of divisor * extent in the
// offset o, so strides and offset that are whole periods are dropped; an Iota over a result's
// full shape, read along its own axis, then becomes that domain dim's index (which the emitters
// write as the loop variable, not as a division). A symbolic stride counts where its form shows
// the period (64 * S for rows of 64 and a symbolic sequence length: a dynamic-shape prefill's
// rotate_half, whose cat then splits into loops without gathers as with static shapes).
void drop_iota_periods(Value& v) {
  if (!v.divisor.is_constant() || !v.extent.is_constant()) return;
  const int64_t period = v.divisor.constant_value() * v.extent.constant_value();
  const auto whole_periods = [&](const Expr& e) { return ir::is_multiple_of(e, period); };
  if (period <= 0) return;
  if (whole_periods(v.index.offset)) v.index.offset = Expr(int64_t{0});
  for (Expr& stride : v.index.strides)
    if (whole_periods(stride)) stride = Expr(int64_t{0});
}

class GroupLowering {
 public:
  GroupLowering(const ir::Graph& graph, const ir::Shape& domain, int reduce_axis)
      : graph_(graph), domain_(domain), axis_(reduce_axis) {
    out_.kernel.domain = domain;
    out_.kernel.reduce_axis = reduce_axis;
  }

  LoweredKernel run(const std::vector<NodeId>& nodes, const std::vector<NodeId>& stored) {
    for (NodeId id : nodes) in_group_[id] = true;
    for (NodeId id : nodes) value_of_[id] = lower_node(id);
    std::string label;
    for (NodeId id : nodes) label += std::string(label.empty() ? "" : " ") + ir::op_name(graph_.node(id).op);
    out_.kernel.label = (axis_ >= 0 ? "row kernel: " : "pointwise kernel: ") + label;
    for (NodeId id : stored) {
      const ir::Node& node = graph_.node(id);
      Store s;
      s.param = param(id, true);
      s.value = value_of_.at(id);
      s.index = Index{Expr(int64_t{0}), domain_strides(node.shape, contiguous_strides(node.shape))};
      out_.kernel.stores.push_back(s);
    }
    return std::move(out_);
  }

 private:
  // Strides of a node-shaped access (the domain itself, or the per-row shape with the reduce axis
  // at size 1) spelled over the domain's dims. Size-1 dims never advance: stride 0.
  std::vector<Expr> domain_strides(const ir::Shape& shape, const std::vector<Expr>& strides) const {
    INTERNAL_CHECK(shape.size() == domain_.size()) << "lowering: rank " << shape.size() << " in a domain of rank "
                                                   << domain_.size();
    std::vector<Expr> out(domain_.size(), Expr(int64_t{0}));
    for (size_t d = 0; d < shape.size(); ++d)
      if (!is_one(shape[d])) out[d] = strides[d];
    return out;
  }

  int param(NodeId node, bool output) {
    auto it = params_.find({node, output});
    if (it != params_.end()) return it->second;
    out_.kernel.params.push_back(Param{graph_.node(node).dtype, output});
    out_.param_nodes.push_back(node);
    const int id = static_cast<int>(out_.kernel.params.size()) - 1;
    params_[{node, output}] = id;
    return id;
  }

  int read(const ir::TensorRef& edge) {
    if (in_group_.count(edge.node)) return value_of_.at(edge.node);
    return outside_value(edge);
  }

  // A value read from outside the group: a load, or an inlined Constant / Iota.
  int outside_value(const ir::TensorRef& edge) {
    const ir::Node& producer = graph_.node(edge.node);
    const Index index{edge.view.offset(), domain_strides(edge.view.shape(), edge.view.strides())};
    Value v;
    v.dtype = producer.dtype;
    if (producer.op == Op::Constant) {
      v.kind = ValueKind::Literal;
      v.literal = producer.scalar;
    } else if (producer.op == Op::Iota) {
      // The Iota's value at element offset o of its contiguous buffer is (o / stride) % size.
      v.kind = ValueKind::IotaAt;
      v.index = index;
      v.divisor = contiguous_strides(producer.shape)[producer.axis];
      v.extent = producer.shape[producer.axis];
      drop_iota_periods(v);
    } else {
      v.kind = ValueKind::Load;
      v.param = param(edge.node, false);
      v.index = index;
    }
    return out_.kernel.add_value(std::move(v));
  }

  int lower_node(NodeId id) {
    const ir::Node& node = graph_.node(id);
    if (node.op == Op::Constant || node.op == Op::Iota) {
      // A materialised source: its value over its own contiguous view.
      return outside_value(ir::TensorRef{id, ir::View::contiguous(node.shape)});
    }
    if (ir::op_has(node.op, ir::kReduction)) {
      INTERNAL_CHECK(node.axis == axis_) << "a reduction over axis " << node.axis << " in a kernel reducing axis " << axis_;
      Reduction r;
      r.op = node.op;
      r.input = read(node.inputs[0]);
      r.dtype = node.dtype;
      out_.kernel.reductions.push_back(r);
      Value v;
      v.kind = ValueKind::Accumulated;
      v.dtype = node.dtype;
      v.args = {static_cast<int>(out_.kernel.reductions.size()) - 1};
      return out_.kernel.add_value(std::move(v));
    }
    if (node.op == Op::Gather) {
      const ir::View& data = node.inputs[0].view;
      Value v;
      v.kind = ValueKind::GatherLoad;
      v.dtype = node.dtype;
      v.param = param(node.inputs[0].node, false);
      std::vector<Expr> strides = data.strides();
      strides[node.axis] = Expr(int64_t{0});
      v.index = Index{data.offset(), domain_strides(node.shape, strides)};
      v.gather_stride = data.strides()[node.axis];
      v.extent = data.shape()[node.axis];
      v.args = {read(node.inputs[1])};
      return out_.kernel.add_value(std::move(v));
    }
    INTERNAL_CHECK(ir::op_has(node.op, ir::kElementwise)) << "cannot lower " << ir::op_name(node.op) << " into a loop kernel";
    Value v;
    v.kind = ValueKind::Compute;
    v.op = node.op;
    v.dtype = node.dtype;
    for (const ir::TensorRef& in : node.inputs) v.args.push_back(read(in));
    return out_.kernel.add_value(std::move(v));
  }

  const ir::Graph& graph_;
  ir::Shape domain_;
  int axis_;
  LoweredKernel out_;
  std::map<NodeId, bool> in_group_;
  std::map<NodeId, int> value_of_;
  std::map<std::pair<NodeId, bool>, int> params_;
};

}  // namespace

std::vector<Expr> contiguous_strides(const ir::Shape& shape) {
  std::vector<Expr> strides(shape.size(), Expr(int64_t{1}));
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

LoweredKernel lower_loop_group(const ir::Graph& graph, const std::vector<NodeId>& nodes, const ir::Shape& domain,
                               int reduce_axis, const std::vector<NodeId>& stored) {
  return GroupLowering(graph, domain, reduce_axis).run(nodes, stored);
}

LoweredKernel lower_matmul_loop(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  const ir::View& a = node.inputs[0].view;
  const ir::View& b = node.inputs[1].view;
  const size_t rank = node.shape.size();
  const Expr k = a.shape()[rank - 1];
  // Domain [batch.., M, N, K], reduce K.
  ir::Shape domain = node.shape;
  domain.push_back(k);
  std::vector<Expr> a_strides(a.strides().begin(), a.strides().begin() + static_cast<long>(rank - 1));
  a_strides.push_back(Expr(int64_t{0}));  // N
  a_strides.push_back(a.strides()[rank - 1]);
  std::vector<Expr> b_strides(b.strides().begin(), b.strides().begin() + static_cast<long>(rank - 2));
  b_strides.push_back(Expr(int64_t{0}));  // M
  b_strides.push_back(b.strides()[rank - 1]);
  b_strides.push_back(b.strides()[rank - 2]);

  LoweredKernel out;
  Kernel& kernel = out.kernel;
  kernel.domain = domain;
  kernel.reduce_axis = static_cast<int>(rank);
  kernel.label = "matmul as a row kernel (dot products over K)";
  const DType dtype = node.dtype;
  kernel.params = {Param{dtype, false}, Param{dtype, false}, Param{dtype, true}};
  out.param_nodes = {node.inputs[0].node, node.inputs[1].node, id};
  const auto load = [&](int param, Index index) {
    Value v;
    v.kind = ValueKind::Load;
    v.dtype = dtype;
    v.param = param;
    v.index = std::move(index);
    return v;
  };
  const int ia = kernel.add_value(load(0, Index{a.offset(), zero_unit_dims(domain, a_strides)}));
  const int ib = kernel.add_value(load(1, Index{b.offset(), zero_unit_dims(domain, b_strides)}));
  // Integers multiply and accumulate in int64 and wrap once on store, as the reference does.
  const DType accumulate = ir::is_floating(dtype) ? dtype : DType::I64;
  Value product;
  product.kind = ValueKind::Compute;
  product.op = Op::Mul;
  product.dtype = accumulate;
  product.args = {ia, ib};
  const int ip = kernel.add_value(product);
  kernel.reductions.push_back(Reduction{Op::SumReduce, ip, accumulate});
  Value acc;
  acc.kind = ValueKind::Accumulated;
  acc.dtype = accumulate;
  acc.args = {0};
  const int iacc = kernel.add_value(acc);
  std::vector<Expr> out_strides = contiguous_strides(node.shape);
  out_strides.push_back(Expr(int64_t{0}));
  kernel.stores.push_back(Store{2, iacc, Index{Expr(int64_t{0}), zero_unit_dims(domain, out_strides)}});
  return out;
}

LoweredKernel lower_gemv(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  const ir::View& a = node.inputs[0].view;
  const ir::View& b = node.inputs[1].view;
  const size_t rank = node.shape.size();
  LoweredKernel out;
  Kernel& kernel = out.kernel;
  kernel.kind = KernelKind::Gemv;
  kernel.domain = node.shape;  // [batch.., M, N]: M = 1 but for an int8 product or a few f32/half rows
  kernel.label = is_one(node.shape[rank - 2]) ? "gemv (M = 1 matmul, weight streamed once)"
                                              : "gemv per row (a block of weight rows in cache across the rows)";
  // The operands in their own dtypes: the output's, or int8 ones the kernel widens.
  kernel.params = {Param{graph.node(node.inputs[0].node).dtype, false},
                   Param{graph.node(node.inputs[1].node).dtype, false}, Param{node.dtype, true}};
  out.param_nodes = {node.inputs[0].node, node.inputs[1].node, id};
  std::vector<Expr> a_strides(a.strides().begin(), a.strides().begin() + static_cast<long>(rank - 1));
  a_strides.push_back(Expr(int64_t{0}));  // N
  std::vector<Expr> w_strides(b.strides().begin(), b.strides().begin() + static_cast<long>(rank - 2));
  w_strides.push_back(Expr(int64_t{0}));  // M
  w_strides.push_back(b.strides()[rank - 1]);
  GemvSpec& g = kernel.gemv;
  g.depth = a.shape()[rank - 1];
  g.a = Index{a.offset(), zero_unit_dims(kernel.domain, a_strides)};
  g.w = Index{b.offset(), zero_unit_dims(kernel.domain, w_strides)};
  g.out = Index{Expr(int64_t{0}), zero_unit_dims(kernel.domain, contiguous_strides(node.shape))};
  if (passes::is_column_gemv(graph, node, {.bf16_pair_columns = kBf16PairColumnRows, .f32_columns = kF32ColumnRows}) &&
      !passes::is_gemv(graph, node)) {
    const bool rows = !is_one(node.shape[rank - 2]);
    kernel.label = !rows                          ? "gemv (M = 1 matmul, weight [K, N] streamed a run of columns at a time)"
                   : node.dtype == DType::BF16 ? "gemm of a few rows (weight [K, N], bf16 pairs, a run of columns at a time)"
                                               : "gemm of a few rows (weight [K, N] read in place, a run of columns at a time)";
    g.columns = true;
    g.rows_in_item = rows;
    g.bf16_pairs = rows && node.dtype == DType::BF16;  // more than one bf16 row: as bf16 pairs (is_column_gemv)
    g.a_depth_stride = a.strides()[rank - 1];
    g.w_depth_stride = b.strides()[rank - 2];
  }
  return out;
}

namespace {

// lower_gemv's single row-major product `gemv` computing `out` instead (the same elements in the
// same order, in the product's shape or a reshape keeping its last dim), which reads `operand` (a
// vector along out's last dim: stride 0 or size 1 elsewhere) in its store: the operand becomes
// the last param, read over the domain, and `out` the output param.
Index append_store_operand(const ir::Graph& graph, LoweredKernel& gemv, NodeId out, const ir::TensorRef& operand) {
  Kernel& kernel = gemv.kernel;
  const size_t params = kernel.gemv.has_output_scale ? 4 : 3;
  const ir::Shape& out_shape = graph.node(out).shape;
  INTERNAL_CHECK(kernel.kind == KernelKind::Gemv && !kernel.gemv.columns && kernel.gemv.group == 0 &&
                 !kernel.gemv.has_bias && kernel.params.size() == params && gemv.param_nodes.size() == params &&
                 out_shape.back() == kernel.domain.back() && ir::numel(out_shape) == ir::numel(kernel.domain))
      << "a store operand for a GEMV that is not lower_gemv's single row-major product";
  kernel.params.push_back(Param{graph.node(operand.node).dtype, false});
  gemv.param_nodes[2] = out;
  gemv.param_nodes.push_back(operand.node);
  std::vector<Expr> strides(kernel.domain.size(), Expr(int64_t{0}));
  strides.back() = operand.view.strides().back();
  return Index{operand.view.offset(), zero_unit_dims(kernel.domain, std::move(strides))};
}

}  // namespace

void add_gemv_bias(const ir::Graph& graph, LoweredKernel& gemv, NodeId add, const ir::TensorRef& bias) {
  gemv.kernel.gemv.bias = append_store_operand(graph, gemv, add, bias);
  gemv.kernel.gemv.has_bias = true;
  gemv.kernel.label += " + bias";
}

void add_gemv_output_scale(const ir::Graph& graph, LoweredKernel& gemv, NodeId mul, const ir::TensorRef& scale) {
  INTERNAL_CHECK(!gemv.kernel.gemv.has_output_scale) << "a second output scale for one GEMV";
  gemv.kernel.gemv.output_scale = append_store_operand(graph, gemv, mul, scale);
  gemv.kernel.gemv.has_output_scale = true;
  gemv.kernel.label += " x per-channel scale";
}

LoweredKernel lower_expert_gemv(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  const ir::View& a = node.inputs[0].view;  // [S, K]
  const ir::View& b = node.inputs[1].view;  // [G, K, N]
  LoweredKernel out;
  Kernel& kernel = out.kernel;
  kernel.kind = KernelKind::Gemv;
  kernel.domain = {Expr::symbol(kExpertRowsSymbol), node.shape[1]};
  kernel.label = "gemv per expert (its rows in strips, its weight streamed once)";
  kernel.params = {Param{node.dtype, false}, Param{node.dtype, false}, Param{node.dtype, true}};
  out.param_nodes = {node.inputs[0].node, node.inputs[1].node, id};
  GemvSpec& g = kernel.gemv;
  g.bf16_pairs = node.dtype == DType::BF16;
  g.depth = a.shape()[1];
  g.a = Index{a.offset(), zero_unit_dims(kernel.domain, {a.strides()[0], Expr(int64_t{0})})};
  g.w = Index{b.offset(), zero_unit_dims(kernel.domain, {Expr(int64_t{0}), b.strides()[2]})};
  g.out = Index{Expr(int64_t{0}), zero_unit_dims(kernel.domain, {node.shape[1], Expr(int64_t{1})})};
  return out;
}

LoweredKernel lower_group_quantized_gemv(const ir::Graph& graph, const passes::GroupQuantizedGemv& pattern) {
  const ir::Node& node = graph.node(pattern.out);
  const Expr depth = node.inputs[1].view.shape()[0];  // K, also q's row stride
  LoweredKernel out;
  Kernel& kernel = out.kernel;
  kernel.kind = KernelKind::Gemv;
  kernel.domain = node.shape;  // [M, N]
  kernel.label = (is_one(node.shape[0]) ? "gemv (M = 1 matmul, " : "gemv per row (") +
                 std::string("weight dequantized per group of ") + std::to_string(pattern.group) + ")";
  kernel.params = {Param{node.dtype, false}, Param{DType::I8, false}, Param{node.dtype, true},
                   Param{graph.node(pattern.scale.node).dtype, false}};
  out.param_nodes = {pattern.a.node, pattern.weight, pattern.out, pattern.scale.node};
  GemvSpec& g = kernel.gemv;
  g.depth = depth;
  g.a = Index{pattern.a.view.offset(), zero_unit_dims(kernel.domain, {pattern.a.view.strides()[0], Expr(int64_t{0})})};
  g.w = Index{Expr(int64_t{0}), zero_unit_dims(kernel.domain, {Expr(int64_t{0}), depth})};
  g.out = Index{Expr(int64_t{0}), zero_unit_dims(kernel.domain, contiguous_strides(node.shape))};
  g.group = pattern.group;
  g.scale = Index{pattern.scale.offset, zero_unit_dims(kernel.domain, {Expr(int64_t{0}), pattern.scale.row_stride})};
  g.scale_group_stride = pattern.scale.group_stride;
  if (pattern.zero) {
    g.has_zero = true;
    g.zero = Index{pattern.zero->offset, zero_unit_dims(kernel.domain, {Expr(int64_t{0}), pattern.zero->row_stride})};
    g.zero_group_stride = pattern.zero->group_stride;
    kernel.params.push_back(Param{DType::I8, false});
    out.param_nodes.push_back(pattern.zero->node);
  }
  return out;
}

LoweredKernel lower_scatter(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  LoweredKernel out;
  Kernel& k = out.kernel;
  k.kind = KernelKind::Scatter;
  k.label = std::string("scatter") + (node.accumulate ? " (accumulate)" : "");
  k.params = {Param{node.dtype, true}, Param{node.dtype, false}, Param{DType::I64, false}, Param{node.dtype, false}};
  out.param_nodes = {id, node.inputs[0].node, node.inputs[1].node, node.inputs[2].node};
  ScatterSpec& s = k.scatter;
  s.axis = node.axis;
  s.accumulate = node.accumulate;
  s.out_shape = node.shape;
  s.data = Index{node.inputs[0].view.offset(), node.inputs[0].view.strides()};
  s.index_shape = node.inputs[1].view.shape();
  s.index = Index{node.inputs[1].view.offset(), node.inputs[1].view.strides()};
  // src is read at the index's coordinates (src may be larger than the index).
  s.src = Index{node.inputs[2].view.offset(), node.inputs[2].view.strides()};
  return out;
}

LoweredKernel lower_scan(const ir::Graph& graph, NodeId id) {
  const ir::Node& node = graph.node(id);
  const ir::View& in = node.inputs[0].view;
  LoweredKernel out;
  Kernel& k = out.kernel;
  k.kind = KernelKind::Scan;
  k.domain = node.shape;
  k.label = "cumsum along axis " + std::to_string(node.axis);
  k.params = {Param{node.dtype, false}, Param{node.dtype, true}};
  out.param_nodes = {node.inputs[0].node, id};
  ScanSpec& s = k.scan;
  s.axis = node.axis;
  s.in = Index{in.offset(), zero_unit_dims(k.domain, in.strides())};
  s.out = Index{Expr(int64_t{0}), zero_unit_dims(k.domain, contiguous_strides(node.shape))};
  s.accumulate = ir::scan_accumulator(node.dtype);
  s.row_blocks = (node.dtype == DType::F32 || node.dtype == DType::BF16) && is_one(s.in.strides[s.axis]) &&
                 is_one(s.out.strides[s.axis]);
  return out;
}

LoweredKernel lower_attention(const ir::Graph& graph, const passes::AttentionPattern& pattern) {
  const ir::Node& node = graph.node(pattern.out);
  const size_t rank = node.shape.size();
  const size_t batch_rank = rank - 2;
  LoweredKernel out;
  Kernel& kernel = out.kernel;
  kernel.kind = KernelKind::Attention;
  kernel.domain = node.shape;  // [batch.., L, Ev]
  kernel.label = "scaled dot-product attention (scores kept per query block)";
  auto matrix = [&](const ir::View& view, size_t row_dim, size_t col_dim) {
    std::vector<Expr> strides(view.strides().begin(), view.strides().begin() + static_cast<long>(batch_rank));
    return MatrixOperand{Index{view.offset(), zero_unit_dims(kernel.domain, std::move(strides))},
                         view.strides()[row_dim], view.strides()[col_dim]};
  };
  AttentionSpec& a = kernel.attention;
  const ir::View& kt = pattern.k_transposed.view;
  a.q_len = node.shape[rank - 2];
  a.kv_len = kt.shape()[rank - 1];
  a.head_dim = kt.shape()[rank - 2];
  a.value_dim = node.shape[rank - 1];
  a.q = matrix(pattern.q.view, rank - 2, rank - 1);
  a.k = matrix(kt, rank - 1, rank - 2);  // kᵀ's columns are k's rows
  a.v = matrix(pattern.v.view, rank - 2, rank - 1);
  a.scale = pattern.scale;
  // q, k and v are f32, or f16/bf16 that the kernel widens as it reads them (passes/attention.h).
  out.param_nodes = {pattern.q.node, pattern.k_transposed.node, pattern.v.node};
  for (ir::NodeId operand : out.param_nodes) kernel.params.push_back(Param{graph.node(operand).dtype, false});
  if (pattern.bias) {
    a.has_bias = true;
    a.bias = matrix(pattern.bias->view, rank - 2, rank - 1);
    kernel.params.push_back(Param{graph.node(pattern.bias->node).dtype, false});
    out.param_nodes.push_back(pattern.bias->node);
  }
  if (pattern.causal) {
    a.causal = true;
    a.causal_shift = pattern.causal->shift;
    if (const std::optional<ir::TensorRef>& shift = pattern.causal->shift_tensor) {
      a.has_shift_param = true;
      a.shift_offset = shift->view.offset();
      kernel.params.push_back(Param{graph.node(shift->node).dtype, false});
      out.param_nodes.push_back(shift->node);
    }
  }
  kernel.params.push_back(Param{DType::F32, true});
  out.param_nodes.push_back(pattern.out);
  return out;
}

}  // namespace luminal::codegen
