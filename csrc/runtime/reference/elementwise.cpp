// Elementwise primitives: each output element from the input elements at the same index.
//
// Floating inputs compute in double and round once on store; integer and bool inputs compute
// in int64 and wrap on store (element.h). The domain is the first value input's dtype, so a
// comparison of f16 computes in double and stores a bool, and Cast reads in its source's domain
// and converts on store.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>

#include "common/error.h"
#include "runtime/reference/element.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

namespace {

using ir::DType;
using ir::Op;

template <typename T>
using UnaryFn = T (*)(T);
template <typename T>
using BinaryFn = T (*)(T, T);

// ---- the math of each op, per domain; nullptr where the op is undefined for it ----

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

UnaryFn<double> float_unary(Op op) {
  switch (op) {
    case Op::Neg: return [](double x) { return -x; };
    case Op::Abs: return [](double x) { return std::fabs(x); };
    case Op::Recip: return [](double x) { return 1.0 / x; };
    case Op::Sqrt: return [](double x) { return std::sqrt(x); };
    case Op::Exp: return [](double x) { return std::exp(x); };
    case Op::Log: return [](double x) { return std::log(x); };
    case Op::Sin: return [](double x) { return std::sin(x); };
    case Op::Cos: return [](double x) { return std::cos(x); };
    case Op::Tanh: return [](double x) { return std::tanh(x); };
    case Op::Erf: return [](double x) { return std::erf(x); };
    case Op::Sigmoid: return sigmoid;
    case Op::Floor: return [](double x) { return std::floor(x); };
    case Op::Ceil: return [](double x) { return std::ceil(x); };
    // nearbyint in the default rounding mode rounds half to even, as torch.round does.
    case Op::Round: return [](double x) { return std::nearbyint(x); };
    case Op::Trunc: return [](double x) { return std::trunc(x); };
    case Op::IsNan: return [](double x) { return std::isnan(x) ? 1.0 : 0.0; };
    case Op::Cast: return [](double x) { return x; };  // the conversion happens on store
    default: return nullptr;
  }
}

UnaryFn<int64_t> int_unary(Op op, DType dtype) {
  switch (op) {
    case Op::Neg: return [](int64_t x) { return wrapping_sub(0, x); };
    case Op::Abs: return [](int64_t x) { return x < 0 ? wrapping_sub(0, x) : x; };
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc:
    case Op::Cast: return [](int64_t x) { return x; };
    case Op::IsNan: return [](int64_t) { return int64_t{0}; };
    case Op::Not:
      if (dtype == DType::Bool) return [](int64_t x) { return int64_t{x == 0}; };
      return [](int64_t x) { return ~x; };
    default: return nullptr;
  }
}

// torch.maximum/minimum propagate NaN, where std::max would depend on the argument order.
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b); }

BinaryFn<double> float_binary(Op op) {
  switch (op) {
    case Op::Add: return [](double a, double b) { return a + b; };
    case Op::Sub: return [](double a, double b) { return a - b; };
    case Op::Mul: return [](double a, double b) { return a * b; };
    case Op::Div: return [](double a, double b) { return a / b; };
    case Op::Mod: return [](double a, double b) { return std::fmod(a, b); };
    case Op::Max: return nan_max;
    case Op::Min: return nan_min;
    case Op::Pow: return [](double a, double b) { return std::pow(a, b); };
    case Op::Lt: return [](double a, double b) { return a < b ? 1.0 : 0.0; };
    case Op::Le: return [](double a, double b) { return a <= b ? 1.0 : 0.0; };
    case Op::Eq: return [](double a, double b) { return a == b ? 1.0 : 0.0; };
    case Op::Ne: return [](double a, double b) { return a != b ? 1.0 : 0.0; };
    default: return nullptr;
  }
}

int64_t truncating_div(int64_t a, int64_t b) {
  USER_CHECK(b != 0) << "integer division by zero";
  if (b == -1) return wrapping_sub(0, a);  // INT64_MIN / -1 overflows; torch wraps
  return a / b;
}

int64_t truncating_mod(int64_t a, int64_t b) {
  USER_CHECK(b != 0) << "integer modulo by zero";
  if (b == -1) return 0;  // INT64_MIN % -1 is undefined in C++
  return a % b;
}

// torch's powi: integer power wrapping on overflow; a negative exponent leaves only 1 and -1
// with an integer result, everything else becomes 0.
int64_t integer_power(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = wrapping_mul(result, base);
    base = wrapping_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

BinaryFn<int64_t> int_binary(Op op) {
  switch (op) {
    case Op::Add: return wrapping_add;
    case Op::Sub: return wrapping_sub;
    case Op::Mul: return wrapping_mul;
    case Op::Div: return truncating_div;
    case Op::Mod: return truncating_mod;
    case Op::Max: return [](int64_t a, int64_t b) { return std::max(a, b); };
    case Op::Min: return [](int64_t a, int64_t b) { return std::min(a, b); };
    case Op::Pow: return integer_power;
    case Op::Lt: return [](int64_t a, int64_t b) { return int64_t{a < b}; };
    case Op::Le: return [](int64_t a, int64_t b) { return int64_t{a <= b}; };
    case Op::Eq: return [](int64_t a, int64_t b) { return int64_t{a == b}; };
    case Op::Ne: return [](int64_t a, int64_t b) { return int64_t{a != b}; };
    // On bool (0/1) the bitwise ops are the logical ones.
    case Op::And: return [](int64_t a, int64_t b) { return a & b; };
    case Op::Or: return [](int64_t a, int64_t b) { return a | b; };
    case Op::Xor: return [](int64_t a, int64_t b) { return a ^ b; };
    default: return nullptr;
  }
}

// ---- the loops ----

template <typename T>
Kernel unary_kernel(UnaryFn<T> fn) {
  return [fn](const KernelCall& call) {
    const Layout output = contiguous_layout(call.shape);
    const Operand& x = call.inputs[0];
    for_each_offset<2>(call.shape, {&output, &x.layout}, [&](const std::array<int64_t, 2>& at) {
      store_value<T>(call.output, call.node.dtype, at[0], fn(load_value<T>(x.data, x.dtype, at[1])));
    });
  };
}

template <typename T>
Kernel binary_kernel(BinaryFn<T> fn) {
  return [fn](const KernelCall& call) {
    const Layout output = contiguous_layout(call.shape);
    const Operand& a = call.inputs[0];
    const Operand& b = call.inputs[1];
    for_each_offset<3>(call.shape, {&output, &a.layout, &b.layout}, [&](const std::array<int64_t, 3>& at) {
      const T result = fn(load_value<T>(a.data, a.dtype, at[1]), load_value<T>(b.data, b.dtype, at[2]));
      store_value<T>(call.output, call.node.dtype, at[0], result);
    });
  };
}

// Copy, and Cast to the same dtype, move bytes: no domain round trip may touch a NaN payload.
void copy_elements(const KernelCall& call) {
  const Operand& x = call.inputs[0];
  copy_to_contiguous(x.data, x.layout, ir::dtype_size(x.dtype), call.output);
}

void select_elements(const KernelCall& call) {
  const Layout output = contiguous_layout(call.shape);
  const Operand& condition = call.inputs[0];
  const Operand& a = call.inputs[1];
  const Operand& b = call.inputs[2];
  const int64_t size = static_cast<int64_t>(ir::dtype_size(call.node.dtype));
  for_each_offset<4>(call.shape, {&output, &condition.layout, &a.layout, &b.layout},
                     [&](const std::array<int64_t, 4>& at) {
                       const bool take_a = load_int(condition.data, condition.dtype, at[1]) != 0;
                       const std::byte* source = take_a ? a.data + at[2] * size : b.data + at[3] * size;
                       std::memcpy(call.output + at[0] * size, source, static_cast<size_t>(size));
                     });
}

}  // namespace

Kernel elementwise_kernel(const ir::Graph& graph, const ir::Node& node) {
  const DType input_dtype = graph.node(node.inputs[0].node).dtype;
  if (node.op == Op::Copy || (node.op == Op::Cast && input_dtype == node.dtype)) return copy_elements;
  if (node.op == Op::Where) return select_elements;
  Kernel kernel;
  if (ir::op_has(node.op, ir::kUnary)) {
    if (ir::is_floating(input_dtype)) {
      if (auto fn = float_unary(node.op)) kernel = unary_kernel<double>(fn);
    } else if (auto fn = int_unary(node.op, input_dtype)) {
      kernel = unary_kernel<int64_t>(fn);
    }
  } else if (ir::op_has(node.op, ir::kBinary)) {
    if (ir::is_floating(input_dtype)) {
      if (auto fn = float_binary(node.op)) kernel = binary_kernel<double>(fn);
    } else if (auto fn = int_binary(node.op)) {
      kernel = binary_kernel<int64_t>(fn);
    }
  }
  UNSUPPORTED_CHECK(kernel) << ir::op_name(node.op) << " is not defined on " << ir::dtype_name(input_dtype)
                            << " (the translator casts to a dtype the op supports first)";
  return kernel;
}

}  // namespace luminal::runtime::reference
