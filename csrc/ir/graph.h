// The primitive IR: a DAG of nodes in topological order. Each node produces one contiguous
// buffer of its dtype and shape; each input edge reads a producer's buffer through a View.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/aten_call.h"
#include "ir/collective.h"
#include "ir/dtype.h"
#include "ir/expr.h"
#include "ir/ops.h"
#include "ir/view.h"

namespace luminal::ir {

using NodeId = int32_t;

// A scalar that keeps integers exact (an i64 position id must not round through a double).
struct Scalar {
  bool is_integer = false;
  int64_t integer = 0;
  double floating = 0.0;

  static Scalar of_int(int64_t v) { return Scalar{true, v, static_cast<double>(v)}; }
  static Scalar of_float(double v) { return Scalar{false, 0, v}; }
  double as_double() const { return is_integer ? static_cast<double>(integer) : floating; }
  std::string to_string() const;
};

// An input edge: the producer's buffer read through a view.
struct TensorRef {
  NodeId node = -1;
  View view;
};

struct Node {
  Op op = Op::Constant;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<TensorRef> inputs;
  int axis = -1;            // Iota, reductions, Gather, Scatter
  bool accumulate = false;  // Scatter
  Scalar scalar;            // Constant
  std::string name;         // Input: graph input name; Weight: FQN
  std::string origin;       // the aten node this came from, for messages and debug dumps
  std::shared_ptr<const AtenCall> aten_call;  // AtenCall
  std::shared_ptr<const Collective> collective;  // Collective
};

// A symbol whose value comes from tensor data at run time, not from an input's shape: nonzero's
// row count, a `.item()` used as a size or asserted on. Its value is the one element of `value`,
// an i64 tensor of one element. Runtimes bind it once `value`'s producer has run, before running
// anything whose shape or view mentions it, and allocate what depends on it only then. When it is
// a size, a negative value is a UserError.
struct DataSymbol {
  std::string name;
  TensorRef value;
  std::string origin;  // the aten node it comes from, for messages
  bool is_size = true;  // false: only assertions mention it (`torch._check(t.item() < 5)`)
};

// A condition the program asserts on its symbols (torch.export's _assert_scalar, such as
// "u0 <= 16" after a nonzero): `holds` evaluates to nonzero when it is true. Runtimes check it
// once every symbol in it is bound, and raise a UserError with `message` when it fails.
struct SymbolAssertion {
  Expr holds;
  std::string message;
};

class Graph {
 public:
  NodeId add(Node node);
  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  Node& mutable_node(NodeId id) { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }

  // Graph outputs, in the order the program returns them (mutations first, as export does).
  std::vector<TensorRef>& outputs() { return outputs_; }
  const std::vector<TensorRef>& outputs() const { return outputs_; }

  const std::vector<DataSymbol>& data_symbols() const { return data_symbols_; }
  void add_data_symbol(DataSymbol symbol) { data_symbols_.push_back(std::move(symbol)); }
  const std::vector<SymbolAssertion>& assertions() const { return assertions_; }
  void add_assertion(SymbolAssertion assertion) { assertions_.push_back(std::move(assertion)); }

  // For passes that rebuild the graph node by node: copies `from`'s outputs, data symbols and
  // assertions, mapping node ids through `renumber` (old id -> new id).
  void take_program_ends(const Graph& from, const std::vector<NodeId>& renumber);

  // Input nodes in call order (user inputs) and weight nodes.
  std::vector<NodeId> input_nodes() const;
  std::vector<NodeId> weight_nodes() const;

 private:
  std::vector<Node> nodes_;
  std::vector<TensorRef> outputs_;
  std::vector<DataSymbol> data_symbols_;
  std::vector<SymbolAssertion> assertions_;
};

// The symbols that a node's shape and the views it reads through mention.
void collect_symbols(const Node& node, std::vector<std::string>& out);

// Human-readable listing, one node per line:
//   %3 = Add f32 [2, s0] (%1 [2, s0] strides [s0, 1], %2 ...)  ; aten::add.Tensor add_1
std::string to_text(const Graph& graph);

// Checks the invariants every pass relies on: inputs precede their users, arities match
// ops.def, elementwise inputs have the node's shape, dtypes agree per op, views stay in
// bounds of their producer where decidable, a data symbol's value precedes every node that
// mentions the symbol. Throws InternalError naming the node.
void verify(const Graph& graph);

}  // namespace luminal::ir
