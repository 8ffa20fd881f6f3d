// Terse construction of IR graphs and host tensors for runtime tests.
//
//   IrTestBuilder b;
//   auto x = b.input("x", DType::F32, {2, 3});
//   auto y = b.binary(Op::Add, x, b.constant(1.0, DType::F32, {2, 3}));
//   b.output(y);
//   std::vector<HostTensor> out = run_reference(b.graph, {HostTensor::of<float>(DType::F32, {2, 3}, {...})});
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/graph.h"
#include "runtime/reference/reference_runtime.h"

namespace luminal::testing {

using ir::DType;
using ir::Op;
using ir::TensorRef;

// A tensor's value: node and the view it is read through (contiguous when just created).
struct IrTestBuilder {
  ir::Graph graph;

  TensorRef add(ir::Node node) {
    const ir::Shape shape = node.shape;
    return TensorRef{graph.add(std::move(node)), ir::View::contiguous(shape)};
  }
  static ir::Node make(Op op, DType dtype, ir::Shape shape, std::vector<TensorRef> inputs = {}) {
    ir::Node node;
    node.op = op;
    node.dtype = dtype;
    node.shape = std::move(shape);
    node.inputs = std::move(inputs);
    node.origin = std::string("test::") + ir::op_name(op);
    return node;
  }

  TensorRef input(const std::string& name, DType dtype, ir::Shape shape) {
    ir::Node node = make(Op::Input, dtype, std::move(shape));
    node.name = name;
    return add(node);
  }
  TensorRef weight(const std::string& name, DType dtype, ir::Shape shape) {
    ir::Node node = make(Op::Weight, dtype, std::move(shape));
    node.name = name;
    return add(node);
  }
  TensorRef constant(ir::Scalar value, DType dtype, ir::Shape shape) {
    ir::Node node = make(Op::Constant, dtype, std::move(shape));
    node.scalar = value;
    return add(node);
  }
  TensorRef constant(double value, DType dtype, ir::Shape shape) {
    return constant(ir::Scalar::of_float(value), dtype, std::move(shape));
  }
  TensorRef iota(int axis, DType dtype, ir::Shape shape) {
    ir::Node node = make(Op::Iota, dtype, std::move(shape));
    node.axis = axis;
    return add(node);
  }
  // Unary elementwise; `dtype` defaults to the input's (Cast and IsNan pass their own).
  TensorRef unary(Op op, const TensorRef& x, std::optional<DType> dtype = std::nullopt) {
    return add(make(op, dtype.value_or(dtype_of(x)), x.view.shape(), {x}));
  }
  TensorRef binary(Op op, const TensorRef& a, const TensorRef& b) {
    const DType dtype = ir::op_has(op, ir::kComparison) ? DType::Bool : dtype_of(a);
    return add(make(op, dtype, a.view.shape(), {a, b}));
  }
  TensorRef where(const TensorRef& condition, const TensorRef& a, const TensorRef& b) {
    return add(make(Op::Where, dtype_of(a), a.view.shape(), {condition, a, b}));
  }
  TensorRef reduce(Op op, const TensorRef& x, int axis) {
    ir::Shape shape = x.view.shape();
    shape[axis] = 1;
    ir::Node node = make(op, dtype_of(x), shape, {x});
    node.axis = axis;
    return add(node);
  }
  TensorRef cumsum(const TensorRef& x, int axis) {
    ir::Node node = make(Op::CumSum, dtype_of(x), x.view.shape(), {x});
    node.axis = axis;
    return add(node);
  }
  TensorRef matmul(const TensorRef& a, const TensorRef& b) {
    ir::Shape shape = a.view.shape();
    shape.back() = b.view.shape().back();
    return add(make(Op::Matmul, dtype_of(a), shape, {a, b}));
  }
  TensorRef grouped_matmul(const TensorRef& a, const TensorRef& b, const TensorRef& offs) {
    return add(make(Op::GroupedMatmul, dtype_of(a), {a.view.shape()[0], b.view.shape()[2]}, {a, b, offs}));
  }
  TensorRef gather(const TensorRef& data, const TensorRef& index, int axis) {
    ir::Node node = make(Op::Gather, dtype_of(data), index.view.shape(), {data, index});
    node.axis = axis;
    return add(node);
  }
  TensorRef scatter(const TensorRef& data, const TensorRef& index, const TensorRef& src, int axis, bool accumulate) {
    ir::Node node = make(Op::Scatter, dtype_of(data), data.view.shape(), {data, index, src});
    node.axis = axis;
    node.accumulate = accumulate;
    return add(node);
  }
  void output(const TensorRef& x) { graph.outputs().push_back(x); }

  DType dtype_of(const TensorRef& x) const { return graph.node(x.node).dtype; }
};

// The same tensor read through another view.
inline TensorRef viewed(TensorRef x, ir::View view) {
  x.view = std::move(view);
  return x;
}

// x [rows, K] times torchao's IntxWeightOnlyConfig weight: W [N, G, group] =
// (Cast(q) - Cast(zero)) * scale, read as W^T [K, N].
inline ir::Graph group_quantized_linear(DType t, int64_t n, int64_t groups, int64_t group, bool zero_points,
                                        int64_t rows = 1) {
  const int64_t k = groups * group;
  IrTestBuilder b;
  auto x = b.input("x", t, {rows, k});
  auto q = b.weight("q", DType::I8, {n, k});
  auto scale = b.weight("scale", t, {n, groups});
  const ir::Shape grouped = {n, groups, group};
  auto per_group = [&](const TensorRef& operand) {
    return viewed(operand, ir::View::contiguous({n, groups, 1}).expand(grouped));
  };
  auto values = b.unary(Op::Cast, viewed(q, ir::View::contiguous(grouped)), t);
  if (zero_points) {
    auto zero = b.weight("zero", DType::I8, {n, groups});
    auto widened_zero = b.unary(Op::Cast, viewed(zero, ir::View::contiguous({n, groups, 1})), t);
    values = b.binary(Op::Sub, values, per_group(widened_zero));
  }
  auto dequantized = b.binary(Op::Mul, values, per_group(scale));
  b.output(b.matmul(x, viewed(dequantized, ir::View::contiguous({n, k}).permute({1, 0}))));
  return b.graph;
}

// A host buffer of any dtype, with explicit strides so that tests can pass strided inputs.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::vector<std::byte> bytes;

  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * sizes[d - 1];
    return strides;
  }
  // Raw storage of `values` (T must match dtype's width), read with the given strides.
  template <typename T>
  static HostTensor of(DType dtype, std::vector<int64_t> sizes, const std::vector<T>& values,
                       std::vector<int64_t> strides = {}) {
    HostTensor t;
    t.dtype = dtype;
    t.strides = strides.empty() ? contiguous_strides(sizes) : std::move(strides);
    t.sizes = std::move(sizes);
    t.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }
  static HostTensor zeros(DType dtype, std::vector<int64_t> sizes) {
    HostTensor t;
    t.dtype = dtype;
    t.strides = contiguous_strides(sizes);
    int64_t count = 1;
    for (int64_t s : sizes) count *= s;
    t.bytes.assign(static_cast<size_t>(count) * ir::dtype_size(dtype), std::byte{0});
    t.sizes = std::move(sizes);
    return t;
  }
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  runtime::BufferRef ref() { return runtime::BufferRef{bytes.data(), dtype, sizes, strides}; }
};

inline std::unique_ptr<runtime::Executable> compile_reference(const ir::Graph& graph,
                                                              const std::map<std::string, runtime::BufferRef>& weights = {}) {
  return runtime::reference::ReferenceRuntime().compile(graph, weights, runtime::CompileOptions{});
}

// The message of the UserError `body` throws, or "(no UserError)".
inline std::string user_error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

// Runs an executable on inputs and returns freshly allocated outputs.
inline std::vector<HostTensor> run_executable(const runtime::Executable& executable, const ir::Graph& graph,
                                              std::vector<HostTensor>& inputs) {
  std::vector<runtime::BufferRef> input_refs;
  for (HostTensor& t : inputs) input_refs.push_back(t.ref());
  const runtime::OutputShapes shapes = executable.output_shapes(input_refs);
  const auto dtype = [&](size_t k) { return graph.node(graph.outputs()[k].node).dtype; };
  std::vector<HostTensor> outputs(shapes.size());
  std::vector<runtime::BufferRef> output_refs(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!shapes[k]) continue;  // sized by a data symbol: allocated when run() asks
    outputs[k] = HostTensor::zeros(dtype(k), *shapes[k]);
    output_refs[k] = outputs[k].ref();
  }
  executable.run(input_refs, output_refs, [&](size_t k, const std::vector<int64_t>& shape) {
    outputs[k] = HostTensor::zeros(dtype(k), shape);
    return outputs[k].ref();
  });
  return outputs;
}

inline std::vector<HostTensor> run_reference(const ir::Graph& graph, std::vector<HostTensor> inputs,
                                             const std::map<std::string, runtime::BufferRef>& weights = {}) {
  return run_executable(*compile_reference(graph, weights), graph, inputs);
}

}  // namespace luminal::testing
