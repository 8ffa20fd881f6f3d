// CumSum along Node::axis (ops.def): one running sum per line, in ir::scan_accumulator's type,
// stored converted to the output dtype at every element. The generated kernels add in the same
// type in the same order, so they match this bit for bit.
#include <type_traits>

#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

// Acc is double (f32, f64), float (f16, bf16) or int64_t (integers, wrapping).
template <typename Acc>
void cumsum(const KernelCall& call) {
  const Operand& x = call.inputs[0];
  const ir::DType dtype = call.node.dtype;
  const int axis = call.node.axis;
  const int64_t extent = call.shape[axis];
  const Layout output = contiguous_layout(call.shape);
  // Walking the shape with the axis at size 1 visits the start of every line.
  std::vector<int64_t> lines = call.shape;
  lines[axis] = 1;
  for_each_offset<2>(lines, {&output, &x.layout}, [&](const std::array<int64_t, 2>& at) {
    Acc sum = 0;
    for (int64_t i = 0; i < extent; ++i) {
      const int64_t in = at[1] + i * x.layout.strides[axis];
      const int64_t out = at[0] + i * output.strides[axis];
      if constexpr (std::is_same_v<Acc, int64_t>) {
        sum = wrapping_add(sum, load_int(x.data, x.dtype, in));
        store_int(call.output, dtype, out, sum);
      } else {
        // A float sum is exact in double, so store_float rounds it once, from float.
        sum += static_cast<Acc>(load_float(x.data, x.dtype, in));
        store_float(call.output, dtype, out, sum);
      }
    }
  });
}

}  // namespace

Kernel scan_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(node.op == ir::Op::CumSum) << ir::op_name(node.op) << " is not a scan";
  INTERNAL_CHECK(node.axis >= 0 && node.axis < static_cast<int>(node.shape.size())) << "scan axis " << node.axis;
  INTERNAL_CHECK(graph.node(node.inputs[0].node).dtype == node.dtype) << "scan input must have the output dtype";
  switch (ir::scan_accumulator(node.dtype)) {
    case ir::DType::F64: return cumsum<double>;
    case ir::DType::F32: return cumsum<float>;
    case ir::DType::I64: return cumsum<int64_t>;
    default: break;
  }
  INTERNAL_ERROR() << "no scan accumulator for " << ir::dtype_name(node.dtype);
  return nullptr;
}

}  // namespace luminal::runtime::reference
