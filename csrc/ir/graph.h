// The primitive IR: a DAG of nodes in topological order. Each node produces one contiguous
// buffer of its dtype and shape; each input edge reads a producer's buffer through a View.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/aten_call.h"
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

  // Input nodes in call order (user inputs) and weight nodes.
  std::vector<NodeId> input_nodes() const;
  std::vector<NodeId> weight_nodes() const;

 private:
  std::vector<Node> nodes_;
  std::vector<TensorRef> outputs_;
};

// Human-readable listing, one node per line:
//   %3 = Add f32 [2, s0] (%1 [2, s0] strides [s0, 1], %2 ...)  ; aten::add.Tensor add_1
std::string to_text(const Graph& graph);

// Checks the invariants every pass relies on: inputs precede their users, arities match
// ops.def, elementwise inputs have the node's shape, dtypes agree per op, views stay in
// bounds of their producer where decidable. Throws InternalError naming the node.
void verify(const Graph& graph);

}  // namespace luminal::ir
