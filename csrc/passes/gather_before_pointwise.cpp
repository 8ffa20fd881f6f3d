#include "passes/gather_before_pointwise.h"

#include <utility>
#include <vector>

namespace luminal::passes {

namespace {

// A gather through `index` along `axis` reads at most a quarter of the elements of a tensor of
// `shape`: the index matches the shape except along the axis, where both are constant sizes.
// Gathering more than that, the moved ops would cost about what they save.
bool gathers_few(const ir::Shape& shape, const ir::Shape& index, int axis) {
  if (shape.size() != index.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) == axis) continue;
    if (!(shape[d] == index[d])) return false;
  }
  const ir::Expr& all = shape[static_cast<size_t>(axis)];
  const ir::Expr& few = index[static_cast<size_t>(axis)];
  return all.is_constant() && few.is_constant() && 4 * few.constant_value() <= all.constant_value();
}

class GatherMover {
 public:
  explicit GatherMover(const ir::Graph& from) : from_(from), renumber_(from.size(), -1) {}

  ir::Graph run() {
    for (size_t i = 0; i < from_.size(); ++i) {
      const ir::NodeId id = static_cast<ir::NodeId>(i);
      const ir::Node& node = from_.node(id);
      if (node.op == ir::Op::Gather && movable(node.inputs[0], node.inputs[1].view.shape(), node.axis)) {
        moved_.clear();
        renumber_[i] = gathered(node.inputs[0], mapped(node.inputs[1]), node).node;
        continue;
      }
      ir::Node copy = node;
      for (ir::TensorRef& in : copy.inputs) in = mapped(in);
      renumber_[i] = out_.add(std::move(copy));
    }
    out_.take_program_ends(from_, renumber_);
    return std::move(out_);
  }

 private:
  ir::TensorRef mapped(ir::TensorRef ref) const {
    ref.node = renumber_[static_cast<size_t>(ref.node)];
    return ref;
  }

  // `data` is a pointwise op's whole result, read as it is laid out, and the gather is small.
  bool movable(const ir::TensorRef& data, const ir::Shape& index_shape, int axis) const {
    const ir::Node& producer = from_.node(data.node);
    return ir::op_has(producer.op, ir::kElementwise) && data.view == ir::View::contiguous(producer.shape) &&
           gathers_few(producer.shape, index_shape, axis);
  }

  // gather(data, index) in the new graph, as `gather`'s node would compute it: through the
  // pointwise ops of `data` where movable, as a Gather node of the data otherwise. `moved_`
  // keeps each operand's result, so an operand read twice (x * x) is gathered once.
  ir::TensorRef gathered(const ir::TensorRef& data, const ir::TensorRef& index, const ir::Node& gather) {
    for (const auto& [operand, result] : moved_)
      if (operand.node == data.node && operand.view == data.view) return result;
    ir::Node node;
    if (movable(data, index.view.shape(), gather.axis)) {
      node = from_.node(data.node);
      for (ir::TensorRef& in : node.inputs) in = gathered(in, index, gather);
      node.shape = index.view.shape();
    } else {
      node = gather;
      node.dtype = from_.node(data.node).dtype;
      node.inputs = {mapped(data), index};
    }
    const ir::TensorRef result = add(std::move(node));
    moved_.emplace_back(data, result);
    return result;
  }

  ir::TensorRef add(ir::Node node) {
    const ir::Shape shape = node.shape;
    return ir::TensorRef{out_.add(std::move(node)), ir::View::contiguous(shape)};
  }

  const ir::Graph& from_;
  ir::Graph out_;
  std::vector<ir::NodeId> renumber_;
  std::vector<std::pair<ir::TensorRef, ir::TensorRef>> moved_;
};

}  // namespace

ir::Graph move_gathers_before_pointwise(ir::Graph graph) { return GatherMover(graph).run(); }

}  // namespace luminal::passes
