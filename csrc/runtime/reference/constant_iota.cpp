// Constant and Iota: nodes that compute their values from the node alone.
#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

void fill_constant(const KernelCall& call) {
  const ir::Scalar& scalar = call.node.scalar;
  const int64_t count = element_count(call.shape);
  for (int64_t i = 0; i < count; ++i) {
    // An integer scalar goes through store_int so that an i64 constant stays exact.
    if (scalar.is_integer)
      store_int(call.output, call.node.dtype, i, scalar.integer);
    else
      store_float(call.output, call.node.dtype, i, scalar.floating);
  }
}

void fill_iota(const KernelCall& call) {
  const Layout output = contiguous_layout(call.shape);
  // Walking the output with the axis' index as a second "offset": a layout whose only nonzero
  // stride is 1 on the axis yields exactly the index along it.
  Layout axis_index;
  axis_index.shape = call.shape;
  axis_index.strides.assign(call.shape.size(), 0);
  axis_index.strides[call.node.axis] = 1;
  for_each_offset<2>(call.shape, {&output, &axis_index}, [&](const std::array<int64_t, 2>& at) {
    store_int(call.output, call.node.dtype, at[0], at[1]);
  });
}

}  // namespace

Kernel source_kernel(const ir::Node& node) {
  if (node.op == ir::Op::Constant) return fill_constant;
  INTERNAL_CHECK(node.op == ir::Op::Iota) << "not a computed source: " << ir::op_name(node.op);
  INTERNAL_CHECK(node.axis >= 0 && node.axis < static_cast<int>(node.shape.size())) << "iota axis " << node.axis;
  return fill_iota;
}

}  // namespace luminal::runtime::reference
