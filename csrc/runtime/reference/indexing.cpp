// Gather and Scatter along Node::axis, with torch.gather / torch.scatter semantics. Indices are
// checked: torch rejects negative ones too, so anything outside [0, size) is a UserError.
#include <cstring>
#include <type_traits>

#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

// torch requires index.size(d) <= other.size(d) on every dim but the indexed axis.
void check_index_fits(const char* what, const Layout& index, const Layout& other, int axis, bool including_axis) {
  USER_CHECK(index.shape.size() == other.shape.size())
      << "index has rank " << index.shape.size() << " but " << what << " has rank " << other.shape.size();
  for (size_t d = 0; d < index.shape.size(); ++d) {
    if (static_cast<int>(d) == axis && !including_axis) continue;
    USER_CHECK(index.shape[d] <= other.shape[d])
        << "index has size " << index.shape[d] << " at dim " << d << " but " << what << " only " << other.shape[d];
  }
}

int64_t checked_index(const Operand& index, int64_t offset, int axis, int64_t size) {
  const int64_t value = load_int(index.data, index.dtype, offset);
  USER_CHECK(value >= 0 && value < size)
      << "index " << value << " is out of bounds for dimension " << axis << " with size " << size;
  return value;
}

// `base` addressed at every index of `shape`, except that the axis does not advance: the index
// tensor supplies that coordinate.
Layout pinned_axis(const Layout& base, const std::vector<int64_t>& shape, int axis) {
  Layout layout{shape, base.strides, base.offset};
  layout.strides[axis] = 0;
  return layout;
}

void gather(const KernelCall& call) {
  const Operand& data = call.inputs[0];
  const Operand& index = call.inputs[1];
  const int axis = call.node.axis;
  check_index_fits("the gathered tensor", index.layout, data.layout, axis, false);
  const Layout output = contiguous_layout(call.shape);
  const Layout source = pinned_axis(data.layout, call.shape, axis);
  const int64_t element_size = static_cast<int64_t>(ir::dtype_size(data.dtype));
  const int64_t axis_size = data.layout.shape[axis];
  const int64_t axis_stride = data.layout.strides[axis];
  for_each_offset<3>(call.shape, {&output, &index.layout, &source}, [&](const std::array<int64_t, 3>& at) {
    const int64_t i = checked_index(index, at[1], axis, axis_size);
    std::memcpy(call.output + at[0] * element_size, data.data + (at[2] + i * axis_stride) * element_size,
                static_cast<size_t>(element_size));
  });
}

template <typename T>
void add_into(std::byte* out, ir::DType dtype, int64_t out_offset, const Operand& src, int64_t src_offset) {
  const T current = load_value<T>(out, dtype, out_offset);
  const T addend = load_value<T>(src.data, src.dtype, src_offset);
  if constexpr (std::is_same_v<T, double>)
    store_value<T>(out, dtype, out_offset, current + addend);
  else
    store_value<T>(out, dtype, out_offset, wrapping_add(current, addend));
}

// Runs in index order, so without accumulate the last write to a position wins.
void scatter(const KernelCall& call) {
  const Operand& data = call.inputs[0];
  const Operand& index = call.inputs[1];
  const Operand& src = call.inputs[2];
  const int axis = call.node.axis;
  check_index_fits("the scattered-into tensor", index.layout, data.layout, axis, false);
  check_index_fits("the source", index.layout, src.layout, axis, true);
  const ir::DType dtype = call.node.dtype;
  const int64_t element_size = static_cast<int64_t>(ir::dtype_size(dtype));
  // In place (the executable made the output the caller's buffer the data operand reads, read
  // contiguously): the data is already there.
  if (data.data != call.output) copy_to_contiguous(data.data, data.layout, static_cast<size_t>(element_size), call.output);
  const Layout output = contiguous_layout(call.shape);
  const Layout target = pinned_axis(output, index.layout.shape, axis);
  const int64_t axis_size = call.shape[axis];
  const int64_t axis_stride = output.strides[axis];
  const bool accumulate = call.node.accumulate;
  const bool floating = ir::is_floating(dtype);
  for_each_offset<3>(index.layout.shape, {&target, &index.layout, &src.layout}, [&](const std::array<int64_t, 3>& at) {
    const int64_t out_offset = at[0] + checked_index(index, at[1], axis, axis_size) * axis_stride;
    if (!accumulate)
      std::memcpy(call.output + out_offset * element_size, src.data + at[2] * element_size,
                  static_cast<size_t>(element_size));
    else if (floating)
      add_into<double>(call.output, dtype, out_offset, src, at[2]);
    else
      add_into<int64_t>(call.output, dtype, out_offset, src, at[2]);
  });
}

}  // namespace

Kernel gather_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(node.axis >= 0 && node.axis < static_cast<int>(node.shape.size())) << "gather axis " << node.axis;
  INTERNAL_CHECK(graph.node(node.inputs[0].node).dtype == node.dtype) << "gathered data must have the output dtype";
  return gather;
}

Kernel scatter_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(node.axis >= 0 && node.axis < static_cast<int>(node.shape.size())) << "scatter axis " << node.axis;
  INTERNAL_CHECK(graph.node(node.inputs[0].node).dtype == node.dtype &&
                 graph.node(node.inputs[2].node).dtype == node.dtype)
      << "scatter data and source must have the output dtype " << ir::dtype_name(node.dtype);
  return scatter;
}

}  // namespace luminal::runtime::reference
