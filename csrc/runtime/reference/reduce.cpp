// Reductions over Node::axis (kept with size 1). Floats accumulate in double and round once;
// integers accumulate in int64 and wrap, so an i64 sum is exact (ops.def).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

using ir::Op;

template <typename T>
struct Reduction {
  T identity;
  T (*combine)(T, T);
  bool needs_elements;  // max and min of nothing are undefined, as in torch
};

template <typename T>
T propagating_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return std::max(a, b);
}

template <typename T>
T propagating_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return std::min(a, b);
}

template <typename T>
Reduction<T> reduction_of(Op op) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  const T lowest = kFloat ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::min();
  const T highest = kFloat ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  switch (op) {
    case Op::SumReduce:
      if constexpr (kFloat) return {0, [](T a, T b) { return a + b; }, false};
      else return {0, wrapping_add, false};
    case Op::ProdReduce:
      if constexpr (kFloat) return {1, [](T a, T b) { return a * b; }, false};
      else return {1, wrapping_mul, false};
    case Op::MaxReduce: return {lowest, propagating_max<T>, true};
    case Op::MinReduce: return {highest, propagating_min<T>, true};
    default: INTERNAL_ERROR() << ir::op_name(op) << " is not a reduction"; return {};
  }
}

template <typename T>
Kernel reduce_with(Reduction<T> reduction) {
  return [reduction](const KernelCall& call) {
    const Operand& x = call.inputs[0];
    const int axis = call.node.axis;
    const int64_t extent = x.layout.shape[axis];
    USER_CHECK(extent > 0 || !reduction.needs_elements)
        << ir::op_name(call.node.op) << " over axis " << axis << " of size 0 has no identity";
    // Walking the output shape (the axis at size 1) with the input's strides visits the start
    // of every line to reduce.
    const Layout output = contiguous_layout(call.shape);
    for_each_offset<2>(call.shape, {&output, &x.layout}, [&](const std::array<int64_t, 2>& at) {
      T accumulator = reduction.identity;
      for (int64_t i = 0; i < extent; ++i)
        accumulator = reduction.combine(accumulator, load_value<T>(x.data, x.dtype, at[1] + i * x.layout.strides[axis]));
      store_value<T>(call.output, call.node.dtype, at[0], accumulator);
    });
  };
}

}  // namespace

Kernel reduce_kernel(const ir::Graph& graph, const ir::Node& node) {
  INTERNAL_CHECK(node.axis >= 0 && node.axis < static_cast<int>(node.shape.size())) << "reduction axis " << node.axis;
  if (ir::is_floating(graph.node(node.inputs[0].node).dtype)) return reduce_with(reduction_of<double>(node.op));
  return reduce_with(reduction_of<int64_t>(node.op));
}

}  // namespace luminal::runtime::reference
