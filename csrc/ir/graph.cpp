#include "ir/graph.h"

#include <map>
#include <sstream>

#include "common/error.h"

namespace luminal::ir {

std::string Scalar::to_string() const {
  if (is_integer) return std::to_string(integer);
  std::ostringstream s;
  s.precision(17);
  s << floating;
  return s.str();
}

NodeId Graph::add(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
}

void Graph::take_program_ends(const Graph& from, const std::vector<NodeId>& renumber) {
  const auto mapped = [&](TensorRef r) {
    r.node = renumber.at(static_cast<size_t>(r.node));
    return r;
  };
  for (const TensorRef& r : from.outputs_) outputs_.push_back(mapped(r));
  for (const DataSymbol& s : from.data_symbols_)
    data_symbols_.push_back(DataSymbol{s.name, mapped(s.value), s.origin, s.is_size});
  for (const SymbolAssertion& a : from.assertions_) assertions_.push_back(a);
}

void collect_symbols(const Node& node, std::vector<std::string>& out) {
  for (const Expr& d : node.shape) d.collect_symbols(out);
  for (const TensorRef& in : node.inputs) in.view.collect_symbols(out);
  if (node.collective) {
    for (const Expr& e : node.collective->output_split_sizes) e.collect_symbols(out);
    for (const Expr& e : node.collective->input_split_sizes) e.collect_symbols(out);
  }
}

std::vector<NodeId> Graph::input_nodes() const {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == Op::Input) ids.push_back(static_cast<NodeId>(i));
  return ids;
}

std::vector<NodeId> Graph::weight_nodes() const {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == Op::Weight) ids.push_back(static_cast<NodeId>(i));
  return ids;
}

namespace {
std::string ref_text(const TensorRef& ref) { return "%" + std::to_string(ref.node) + " " + ref.view.to_string(); }
}  // namespace

std::string to_text(const Graph& graph) {
  std::ostringstream out;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& n = graph.nodes()[i];
    out << "%" << i << " = " << op_name(n.op) << " " << dtype_name(n.dtype) << " " << shape_to_string(n.shape);
    if (n.axis >= 0) out << " axis=" << n.axis;
    if (n.accumulate) out << " accumulate";
    if (n.op == Op::Constant) out << " value=" << n.scalar.to_string();
    if (n.aten_call) out << " call=" << n.aten_call->full_name() << "[" << n.aten_call->output_index << "]";
    if (n.collective) out << " collective=" << n.collective->describe();
    if (!n.name.empty()) out << " name=" << n.name;
    if (!n.inputs.empty()) {
      out << " (";
      for (size_t j = 0; j < n.inputs.size(); ++j) out << (j ? ", " : "") << ref_text(n.inputs[j]);
      out << ")";
    }
    if (!n.origin.empty()) out << "  ; " << n.origin;
    out << "\n";
  }
  out << "outputs:";
  for (const TensorRef& r : graph.outputs()) out << " " << ref_text(r) << ";";
  out << "\n";
  for (const DataSymbol& s : graph.data_symbols())
    out << "data symbol " << s.name << " = " << ref_text(s.value) << "\n";
  for (const SymbolAssertion& a : graph.assertions())
    out << "assert " << a.holds.to_string() << "  ; " << a.message << "\n";
  return out.str();
}

namespace {
void verify_node(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  INTERNAL_CHECK(op_arity(n.op) == kVariadic || static_cast<int>(n.inputs.size()) == op_arity(n.op))
      << op_name(n.op) << " has " << n.inputs.size() << " inputs, expected " << op_arity(n.op);
  for (const TensorRef& in : n.inputs) {
    INTERNAL_CHECK(in.node >= 0 && in.node < id) << "input %" << in.node << " does not precede its user";
  }
  auto input_dtype = [&](size_t i) { return graph.node(n.inputs[i].node).dtype; };
  if (op_has(n.op, kElementwise)) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      INTERNAL_CHECK(n.inputs[i].view.shape() == n.shape)
          << "input " << i << " has shape " << shape_to_string(n.inputs[i].view.shape()) << ", node has "
          << shape_to_string(n.shape);
    }
  }
  if (op_has(n.op, kComparison)) {
    INTERNAL_CHECK(n.dtype == DType::Bool) << "comparison must produce bool";
    INTERNAL_CHECK(input_dtype(0) == input_dtype(1)) << "comparison of " << dtype_name(input_dtype(0)) << " and "
                                                     << dtype_name(input_dtype(1));
  } else if (n.op == Op::IsNan) {
    INTERNAL_CHECK(n.dtype == DType::Bool) << "IsNan must produce bool";
  } else if (n.op == Op::Where) {
    INTERNAL_CHECK(input_dtype(0) == DType::Bool) << "Where condition must be bool";
    INTERNAL_CHECK(input_dtype(1) == n.dtype && input_dtype(2) == n.dtype) << "Where branches must match the output dtype";
  } else if (op_has(n.op, kElementwise) && n.op != Op::Cast) {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      INTERNAL_CHECK(input_dtype(i) == n.dtype) << "input " << i << " is " << dtype_name(input_dtype(i)) << ", node is "
                                                << dtype_name(n.dtype);
  }
  if (op_has(n.op, kReduction)) {
    const Shape& in = n.inputs[0].view.shape();
    INTERNAL_CHECK(n.axis >= 0 && n.axis < static_cast<int>(in.size())) << "reduction axis " << n.axis;
    Shape expected = in;
    expected[n.axis] = Expr(int64_t{1});
    INTERNAL_CHECK(expected == n.shape) << "reduction output shape " << shape_to_string(n.shape);
  }
  if (op_has(n.op, kScan)) {
    const Shape& in = n.inputs[0].view.shape();
    INTERNAL_CHECK(n.axis >= 0 && n.axis < static_cast<int>(in.size())) << "scan axis " << n.axis;
    INTERNAL_CHECK(in == n.shape) << "scan input has shape " << shape_to_string(in) << ", node has "
                                  << shape_to_string(n.shape);
    INTERNAL_CHECK(input_dtype(0) == n.dtype) << "scan of " << dtype_name(input_dtype(0)) << " to "
                                              << dtype_name(n.dtype);
    // torch's cumsum promotes bool to i64, so a bool scan is a translator bug.
    INTERNAL_CHECK(n.dtype != DType::Bool) << "scan of bool";
  }
  if (n.op == Op::Matmul) {
    const Shape& a = n.inputs[0].view.shape();
    const Shape& b = n.inputs[1].view.shape();
    INTERNAL_CHECK(a.size() >= 2 && a.size() == b.size() && a.size() == n.shape.size()) << "matmul ranks";
    INTERNAL_CHECK(a[a.size() - 1] == b[b.size() - 2]) << "matmul inner dims " << shape_to_string(a) << " x "
                                                        << shape_to_string(b);
  }
  if (n.op == Op::GroupedMatmul) {
    const Shape& a = n.inputs[0].view.shape();
    const Shape& b = n.inputs[1].view.shape();
    const Shape& offs = n.inputs[2].view.shape();
    INTERNAL_CHECK(a.size() == 2 && b.size() == 3 && offs.size() == 1) << "grouped matmul ranks";
    INTERNAL_CHECK(a[1] == b[1] && offs[0] == b[0]) << "grouped matmul of " << shape_to_string(a) << " x "
                                                    << shape_to_string(b) << " with offs " << shape_to_string(offs);
    INTERNAL_CHECK(n.shape == Shape({a[0], b[2]})) << "grouped matmul output shape " << shape_to_string(n.shape);
    INTERNAL_CHECK(is_floating(n.dtype) && input_dtype(0) == n.dtype && input_dtype(1) == n.dtype)
        << "grouped matmul of " << dtype_name(input_dtype(0)) << " x " << dtype_name(input_dtype(1)) << " to "
        << dtype_name(n.dtype);
    INTERNAL_CHECK(input_dtype(2) == DType::I64) << "grouped matmul offs must be i64";
  }
  if (n.op == Op::Gather || n.op == Op::Scatter) {
    INTERNAL_CHECK(input_dtype(1) == DType::I64) << "index must be i64";
    INTERNAL_CHECK(n.axis >= 0 && n.axis < static_cast<int>(n.inputs[0].view.rank())) << "indexing axis " << n.axis;
  }
  if (n.op == Op::AtenCall) {
    INTERNAL_CHECK(n.aten_call != nullptr) << "AtenCall without its call";
  }
  if (n.op == Op::Collective) {
    INTERNAL_CHECK(n.collective != nullptr) << "Collective without its description";
    INTERNAL_CHECK(input_dtype(0) == n.dtype) << "collective from " << dtype_name(input_dtype(0)) << " to "
                                              << dtype_name(n.dtype);
  }
  if (n.op == Op::Iota) {
    INTERNAL_CHECK(n.axis >= 0 && n.axis < static_cast<int>(n.shape.size())) << "iota axis";
  }
}
// Each data symbol is read from one i64 element computed before anything that mentions the
// symbol (the runtimes bind it in node order), and no input's shape mentions it (inputs bind
// only the symbols of their own shapes).
void verify_data_symbols(const Graph& graph) {
  std::map<std::string, NodeId> source;
  for (const DataSymbol& s : graph.data_symbols()) {
    INTERNAL_CHECK(s.value.node >= 0 && s.value.node < static_cast<NodeId>(graph.size()))
        << "data symbol " << s.name << " reads %" << s.value.node;
    INTERNAL_CHECK(graph.node(s.value.node).dtype == DType::I64) << "data symbol " << s.name << " is read from a "
                                                                  << dtype_name(graph.node(s.value.node).dtype);
    const Expr count = numel(s.value.view.shape());
    INTERNAL_CHECK(count.is_constant() && count.constant_value() == 1)
        << "data symbol " << s.name << " is read from " << shape_to_string(s.value.view.shape()) << ", not one element";
    INTERNAL_CHECK(source.emplace(s.name, s.value.node).second) << "data symbol " << s.name << " is defined twice";
  }
  if (source.empty()) return;
  std::vector<std::string> mentioned;
  for (size_t i = 0; i < graph.size(); ++i) {
    mentioned.clear();
    const Node& node = graph.node(static_cast<NodeId>(i));
    collect_symbols(node, mentioned);
    for (const std::string& name : mentioned) {
      auto it = source.find(name);
      if (it == source.end()) continue;
      INTERNAL_CHECK(node.op != Op::Input)
          << "input '" << node.name << "' has the data symbol " << name << " in its shape";
      INTERNAL_CHECK(it->second < static_cast<NodeId>(i))
          << "node %" << i << " mentions the data symbol " << name << " before its value %" << it->second;
    }
  }
}
}  // namespace

void verify(const Graph& graph) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    try {
      verify_node(graph, static_cast<NodeId>(i));
    } catch (Error& e) {
      const Node& n = graph.nodes()[i];
      e.add_context("verify: node %" + std::to_string(i) + " " + op_name(n.op) +
                    (n.origin.empty() ? "" : " (from " + n.origin + ")"));
      throw;
    }
  }
  for (const TensorRef& r : graph.outputs())
    INTERNAL_CHECK(r.node >= 0 && r.node < static_cast<NodeId>(graph.size())) << "graph output %" << r.node;
  verify_data_symbols(graph);
}

}  // namespace luminal::ir
