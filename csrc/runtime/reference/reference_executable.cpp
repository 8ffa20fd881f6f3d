#include "runtime/reference/reference_executable.h"

#include <cstdint>
#include <cstring>

#include "common/error.h"
#include "ir/bind_symbols.h"
#include "runtime/buffer_layout.h"
#include "runtime/aligned_buffer.h"
#include "runtime/reference/strided.h"

namespace luminal::runtime::reference {

// Everything one run() owns, so that concurrent runs share nothing mutable.
struct ReferenceExecutable::RunState {
  explicit RunState(size_t node_count)
      : shapes(node_count), shape_known(node_count, false), data(node_count), owned(node_count),
        in_place_target(node_count) {}

  ir::SymbolBindings bindings;
  std::vector<std::vector<int64_t>> shapes;  // each node's shape for this run
  std::vector<bool> shape_known;             // false until the data symbols it mentions are bound
  std::vector<const std::byte*> data;        // each node's contiguous buffer; null once released
  std::vector<AlignedBuffer> owned;          // the buffers this run allocated; empty for borrowed ones
  std::vector<std::byte*> in_place_target;   // a Scatter writing into the caller's buffer: that buffer
  std::vector<bool> written_in_place;        // per graph output: already holds its value
  int64_t bytes_copied = 0;
};

namespace {

std::string describe(ir::NodeId id, const ir::Node& node) {
  std::string text = "node %" + std::to_string(id) + " " + ir::op_name(node.op);
  if (!node.name.empty()) text += " '" + node.name + "'";
  if (!node.origin.empty()) text += " (from " + node.origin + ")";
  return text;
}

// Nodes read their producers as contiguous buffers, so a strided caller buffer is copied once.
const std::byte* contiguous_source(const BufferRef& buffer, AlignedBuffer& owned) {
  const auto* data = static_cast<const std::byte*>(buffer.data);
  if (is_dense(buffer)) return data;
  const size_t element_size = ir::dtype_size(buffer.dtype);
  owned = AlignedBuffer(static_cast<size_t>(element_count(buffer.sizes)) * element_size);
  copy_to_contiguous(data, Layout{buffer.sizes, buffer.strides, 0}, element_size, owned.data());
  return owned.data();
}

std::vector<std::vector<int64_t>> input_sizes(const std::vector<BufferRef>& inputs) {
  std::vector<std::vector<int64_t>> sizes;
  for (const BufferRef& input : inputs) sizes.push_back(input.sizes);
  return sizes;
}

// Scatters that may update a caller's buffer in place (StaticCache's index_copy_ of the new K/V
// rows): the data operand is a whole Input or Weight read contiguously, the Scatter's result is
// returned contiguously as a graph output, and nothing reads the old value once the Scatter has
// run: no later node, no other operand of the Scatter, no graph output. Maps node -> output.
std::vector<int> in_place_candidates(const ir::Graph& graph) {
  const auto count = static_cast<ir::NodeId>(graph.size());
  std::vector<int> candidates(graph.size(), -1);
  for (ir::NodeId id = 0; id < count; ++id) {
    const ir::Node& node = graph.node(id);
    if (node.op != ir::Op::Scatter || !node.inputs[0].view.is_contiguous()) continue;
    const ir::NodeId source = node.inputs[0].node;
    const ir::Op source_op = graph.node(source).op;
    if (source_op != ir::Op::Input && source_op != ir::Op::Weight) continue;
    bool old_value_read_later = false;
    for (ir::NodeId reader = id; reader < count && !old_value_read_later; ++reader) {
      const auto& edges = graph.node(reader).inputs;
      for (size_t e = 0; e < edges.size(); ++e)
        if (edges[e].node == source && !(reader == id && e == 0)) old_value_read_later = true;
    }
    int output_index = -1;
    for (size_t k = 0; k < graph.outputs().size(); ++k) {
      const ir::TensorRef& output = graph.outputs()[k];
      if (output.node == source) old_value_read_later = true;
      if (output_index < 0 && output.node == id && output.view.is_contiguous()) output_index = static_cast<int>(k);
    }
    if (!old_value_read_later) candidates[id] = output_index;
  }
  return candidates;
}

// For each node, the last node that reads it; graph outputs are read after every node.
std::vector<std::vector<ir::NodeId>> release_points(const ir::Graph& graph) {
  const auto count = static_cast<ir::NodeId>(graph.size());
  std::vector<ir::NodeId> last_reader(graph.size());
  for (ir::NodeId id = 0; id < count; ++id) {
    last_reader[id] = id;  // a node nobody reads is released right after it runs
    for (const ir::TensorRef& edge : graph.node(id).inputs) last_reader[edge.node] = id;
  }
  for (const ir::TensorRef& output : graph.outputs()) last_reader[output.node] = count;
  std::vector<std::vector<ir::NodeId>> released_after(graph.size());
  for (ir::NodeId id = 0; id < count; ++id)
    if (last_reader[id] < count) released_after[last_reader[id]].push_back(id);
  return released_after;
}

}  // namespace

ReferenceExecutable::ReferenceExecutable(ir::Graph graph, std::map<std::string, BufferRef> weights)
    : graph_(std::move(graph)), weights_(std::move(weights)), symbols_bound_after_(graph_.size()) {
  ir::verify(graph_);
  for (const ir::DataSymbol& symbol : graph_.data_symbols()) symbols_bound_after_[symbol.value.node].push_back(&symbol);
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(graph_.size()); ++id) {
    const ir::Node& node = graph_.node(id);
    try {
      if (node.op == ir::Op::Weight) {
        auto binding = weights_.find(node.name);
        USER_CHECK(binding != weights_.end()) << "no buffer is bound to this weight";
        check_weight(node, binding->second);
      }
      kernels_.push_back(node.op == ir::Op::Input || node.op == ir::Op::Weight ? Kernel{}
                                                                              : select_kernel(graph_, node));
    } catch (Error& e) {
      e.add_context(describe(id, node));
      throw;
    }
  }
  released_after_ = release_points(graph_);
  in_place_output_ = in_place_candidates(graph_);
}

OutputShapes ReferenceExecutable::output_shapes(const std::vector<BufferRef>& inputs) const {
  const ir::SymbolBindings bindings = ir::bind_symbols(graph_, input_sizes(inputs));
  OutputShapes shapes;
  for (const ir::TensorRef& output : graph_.outputs())
    shapes.push_back(ir::evaluate_shape_if_bound(output.view.shape(), bindings));
  return shapes;
}

void ReferenceExecutable::run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
                              const LateOutputAllocator& allocate_late) const {
  RunState state(graph_.size());
  bind_sources(inputs, state);
  OutputShapes produced;
  for (const ir::TensorRef& output : graph_.outputs())
    produced.push_back(ir::evaluate_shape_if_bound(output.view.shape(), state.bindings));
  check_outputs(graph_, outputs, produced);
  choose_in_place(outputs, state);
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(graph_.size()); ++id) {
    if (kernels_[id]) compute_node(id, state);
    for (const ir::DataSymbol* symbol : symbols_bound_after_[id]) bind_data_symbol(*symbol, state);
    for (ir::NodeId released : released_after_[id]) {
      state.owned[released] = AlignedBuffer();
      state.data[released] = nullptr;
    }
  }
  write_outputs(outputs, produced, allocate_late, state);
  last_bytes_copied_.store(state.bytes_copied);
}

void ReferenceExecutable::bind_data_symbol(const ir::DataSymbol& symbol, RunState& state) const {
  const int64_t offset = symbol.value.view.offset().evaluate(state.bindings);
  int64_t value = 0;
  std::memcpy(&value, state.data[symbol.value.node] + offset * static_cast<int64_t>(sizeof value), sizeof value);
  ir::bind_data_symbol(graph_, symbol, value, state.bindings);
}

// A candidate Scatter writes in place when the output buffer the caller passed is exactly the
// dense buffer its data operand reads (the caller passed its cache tensor as the mutation's
// output) and overlaps no other source; otherwise it scatters into a fresh buffer as usual.
void ReferenceExecutable::choose_in_place(const std::vector<BufferRef>& outputs, RunState& state) const {
  state.written_in_place.assign(outputs.size(), false);
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(graph_.size()); ++id) {
    const int k = in_place_output_[id];
    if (k < 0 || outputs[k].data == nullptr || !state.shape_known[id]) continue;
    const ir::NodeId source = graph_.node(id).inputs[0].node;
    const ir::DType dtype = graph_.node(id).dtype;
    auto* destination = static_cast<std::byte*>(outputs[k].data);
    const int64_t bytes = byte_count(state.shapes[id], dtype);
    if (state.owned[source].data() != nullptr || state.data[source] != destination ||
        byte_count(state.shapes[source], dtype) != bytes || byte_count(outputs[k].sizes, outputs[k].dtype) != bytes)
      continue;
    bool shared = false;
    for (ir::NodeId other = 0; other < static_cast<ir::NodeId>(graph_.size()) && !shared; ++other) {
      const ir::Op op = graph_.node(other).op;
      if (other == source || (op != ir::Op::Input && op != ir::Op::Weight)) continue;
      shared = overlaps(state.data[other], byte_count(state.shapes[other], graph_.node(other).dtype), destination, bytes);
    }
    if (shared || state.written_in_place[k]) continue;
    state.in_place_target[id] = destination;
    state.written_in_place[k] = true;
  }
}

void ReferenceExecutable::rebind_weight(const std::string& name, const BufferRef& buffer) {
  bool found = false;
  for (ir::NodeId id : graph_.weight_nodes()) {
    if (graph_.node(id).name != name) continue;
    check_weight(graph_.node(id), buffer);
    found = true;
  }
  USER_CHECK(found) << "the compiled graph has no weight named '" << name << "'";
  weights_[name] = buffer;
}

void ReferenceExecutable::bind_sources(const std::vector<BufferRef>& inputs, RunState& state) const {
  state.bindings = ir::bind_symbols(graph_, input_sizes(inputs));
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(graph_.size()); ++id) {
    std::optional<std::vector<int64_t>> shape = ir::evaluate_shape_if_bound(graph_.node(id).shape, state.bindings);
    state.shape_known[id] = shape.has_value();
    if (shape) state.shapes[id] = std::move(*shape);
  }
  const std::vector<ir::NodeId> input_nodes = graph_.input_nodes();
  for (size_t i = 0; i < input_nodes.size(); ++i) {
    const ir::Node& node = graph_.node(input_nodes[i]);
    check_buffer("input", node.name, inputs[i], node.dtype);
    state.data[input_nodes[i]] = contiguous_source(inputs[i], state.owned[input_nodes[i]]);
    if (state.owned[input_nodes[i]].data() != nullptr) state.bytes_copied += byte_count(inputs[i].sizes, node.dtype);
  }
  for (ir::NodeId id : graph_.weight_nodes()) {
    const ir::Node& node = graph_.node(id);
    const BufferRef& weight = weights_.at(node.name);
    check_weight_shape(node, weight, state.shapes[id]);
    state.data[id] = contiguous_source(weight, state.owned[id]);
    if (state.owned[id].data() != nullptr) state.bytes_copied += byte_count(weight.sizes, node.dtype);
  }
}

void ReferenceExecutable::compute_node(ir::NodeId id, RunState& state) const {
  const ir::Node& node = graph_.node(id);
  try {
    if (!state.shape_known[id]) {
      state.shapes[id] = ir::evaluate_shape(node.shape, state.bindings);
      state.shape_known[id] = true;
    }
    KernelCall call{node, state.shapes[id], {}, nullptr, &state.bindings};
    for (const ir::TensorRef& edge : node.inputs) {
      Layout layout = evaluate_layout(edge.view, state.bindings);
      INTERNAL_CHECK(addresses_within(layout, element_count(state.shapes[edge.node])))
          << "the view " << edge.view.to_string() << " reads outside %" << edge.node << " of shape "
          << sizes_text(state.shapes[edge.node]);
      call.inputs.push_back(Operand{state.data[edge.node], graph_.node(edge.node).dtype, std::move(layout)});
    }
    if (state.in_place_target[id] != nullptr) {
      call.output = state.in_place_target[id];  // the Scatter kernel skips copying data onto itself
    } else {
      state.owned[id] = AlignedBuffer(static_cast<size_t>(byte_count(call.shape, node.dtype)));
      call.output = state.owned[id].data();
    }
    state.data[id] = call.output;
    const auto updates_caller_buffer = [&] {
      if (node.op != ir::Op::Scatter) return false;
      const ir::Op data_op = graph_.node(node.inputs[0].node).op;
      return data_op == ir::Op::Input || data_op == ir::Op::Weight;
    };
    if (updates_caller_buffer()) {
      const int64_t element_size = static_cast<int64_t>(ir::dtype_size(node.dtype));
      if (state.in_place_target[id] == nullptr) state.bytes_copied += byte_count(call.shape, node.dtype);
      state.bytes_copied += element_count(call.inputs[1].layout.shape) * element_size;
    }
    kernels_[id](call);
  } catch (Error& e) {
    e.add_context(describe(id, node));
    throw;
  }
}

void ReferenceExecutable::write_outputs(const std::vector<BufferRef>& caller_outputs, const OutputShapes& known,
                                        const LateOutputAllocator& allocate_late, RunState& state) const {
  // Outputs whose shape a data symbol decides are allocated now that every symbol is bound.
  std::vector<BufferRef> outputs = caller_outputs;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (!known[k]) outputs[k] = allocate_late(k, ir::evaluate_shape(graph_.outputs()[k].view.shape(), state.bindings));
  // An output may alias an input (an in-place KV-cache update). Every node has run, so only an
  // output that returns caller memory directly can still read memory another output overwrites:
  // snapshot those sources before the first write.
  for (const ir::TensorRef& output : graph_.outputs()) {
    const ir::NodeId source = output.node;
    if (state.owned[source].data() != nullptr) continue;
    const int64_t source_bytes = byte_count(state.shapes[source], graph_.node(source).dtype);
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (state.written_in_place[k]) continue;  // not written again, so it clobbers nothing
      const BufferRef& destination = outputs[k];
      const int64_t destination_bytes = byte_count(destination.sizes, destination.dtype);
      if (!overlaps(state.data[source], source_bytes, static_cast<const std::byte*>(destination.data), destination_bytes))
        continue;
      AlignedBuffer snapshot(static_cast<size_t>(source_bytes));
      std::memcpy(snapshot.data(), state.data[source], static_cast<size_t>(source_bytes));
      state.bytes_copied += source_bytes;
      state.data[source] = snapshot.data();
      state.owned[source] = std::move(snapshot);
      break;
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (state.written_in_place[k]) continue;
    const ir::TensorRef& output = graph_.outputs()[k];
    state.bytes_copied += byte_count(outputs[k].sizes, outputs[k].dtype);
    const Layout layout = evaluate_layout(output.view, state.bindings);
    INTERNAL_CHECK(addresses_within(layout, element_count(state.shapes[output.node])))
        << "output " << k << " view " << output.view.to_string() << " reads outside %" << output.node;
    copy_to_contiguous(state.data[output.node], layout, ir::dtype_size(graph_.node(output.node).dtype),
                       static_cast<std::byte*>(outputs[k].data));
  }
}

}  // namespace luminal::runtime::reference
