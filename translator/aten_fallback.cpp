#include "translator/aten_fallback.h"

#include <memory>

#include "common/error.h"
#include "translator/args.h"
#include "translator/sym_expr.h"

namespace luminal::translator {
namespace {

using Kind = pt2::Argument::Kind;
using ir::AtenArg;

ir::Expr sym_value(const TranslationContext& cx, const pt2::SymArgument& s) {
  return s.name ? cx.sym_int(*s.name) : ir::Expr(s.int_value);
}

// The inputs of the call so far, each program tensor added once.
struct CallInputs {
  std::vector<ir::TensorRef> refs;
  std::vector<std::string> names;

  int index_of(const TranslationContext& cx, const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    names.push_back(name);
    refs.push_back(cx.tensor(name).ref);
    return static_cast<int>(refs.size()) - 1;
  }
};

AtenArg convert(const TranslationContext& cx, const pt2::NamedArgument& named, CallInputs& inputs) {
  const pt2::Argument& a = named.arg;
  AtenArg out;
  out.name = named.name;
  switch (a.kind) {
    case Kind::None: out.kind = AtenArg::Kind::None; break;
    case Kind::Tensor: out.kind = AtenArg::Kind::Tensor; out.tensors = {inputs.index_of(cx, a.tensors.at(0))}; break;
    case Kind::OptionalTensor:
      if (a.tensors.empty() || a.tensors[0].empty()) {
        out.kind = AtenArg::Kind::None;
      } else {
        out.kind = AtenArg::Kind::Tensor;
        out.tensors = {inputs.index_of(cx, a.tensors[0])};
      }
      break;
    case Kind::Tensors:
    case Kind::OptionalTensors:
      out.kind = a.kind == Kind::Tensors ? AtenArg::Kind::Tensors : AtenArg::Kind::OptionalTensors;
      for (const std::string& t : a.tensors) out.tensors.push_back(t.empty() ? -1 : inputs.index_of(cx, t));
      break;
    case Kind::Int: out.kind = AtenArg::Kind::Int; out.ints = {ir::Expr(a.ints.at(0))}; break;
    case Kind::Ints:
      out.kind = AtenArg::Kind::Ints;
      for (int64_t v : a.ints) out.ints.push_back(ir::Expr(v));
      break;
    case Kind::SymInt: out.kind = AtenArg::Kind::Int; out.ints = {sym_value(cx, a.syms.at(0))}; break;
    case Kind::SymInts:
      out.kind = AtenArg::Kind::Ints;
      for (const pt2::SymArgument& s : a.syms) out.ints.push_back(sym_value(cx, s));
      break;
    case Kind::Float: out.kind = AtenArg::Kind::Float; out.floats = {a.floats.at(0)}; break;
    case Kind::Floats: out.kind = AtenArg::Kind::Floats; out.floats = a.floats; break;
    case Kind::SymFloat:
      UNSUPPORTED_CHECK(!a.syms.at(0).name) << "argument '" << named.name
                                            << "' is a symbolic float, which the ATen fallback cannot evaluate";
      out.kind = AtenArg::Kind::Float;
      out.floats = {a.syms[0].float_value};
      break;
    case Kind::Bool: out.kind = AtenArg::Kind::Bool; out.bools = {static_cast<bool>(a.bools.at(0))}; break;
    case Kind::Bools: out.kind = AtenArg::Kind::Bools; out.bools.assign(a.bools.begin(), a.bools.end()); break;
    case Kind::SymBool:
      UNSUPPORTED_CHECK(!a.syms.at(0).name) << "argument '" << named.name
                                            << "' is a symbolic bool, which the ATen fallback cannot evaluate";
      out.kind = AtenArg::Kind::Bool;
      out.bools = {a.syms[0].bool_value};
      break;
    case Kind::String: out.kind = AtenArg::Kind::String; out.text = a.strings.at(0); break;
    case Kind::ScalarType:
      out.kind = AtenArg::Kind::ScalarType;
      out.dtype = to_ir_dtype(static_cast<pt2::ScalarType>(a.ints.at(0)), "argument '" + named.name + "'");
      break;
    case Kind::Layout:
      USER_CHECK(static_cast<pt2::Layout>(a.ints.at(0)) == pt2::Layout::Strided)
          << "argument '" << named.name << "' asks for a non-strided layout; compiled graphs hold strided tensors only";
      out.kind = AtenArg::Kind::Layout;
      break;
    case Kind::MemoryFormat: {
      out.kind = AtenArg::Kind::MemoryFormat;
      switch (static_cast<pt2::MemoryFormat>(a.ints.at(0))) {
        case pt2::MemoryFormat::ChannelsLast: out.memory_format = AtenArg::MemoryFormat::ChannelsLast; break;
        case pt2::MemoryFormat::ChannelsLast3d: out.memory_format = AtenArg::MemoryFormat::ChannelsLast3d; break;
        case pt2::MemoryFormat::Preserve: out.memory_format = AtenArg::MemoryFormat::Preserve; break;
        default: out.memory_format = AtenArg::MemoryFormat::Contiguous; break;
      }
      break;
    }
    case Kind::Device:
      out.kind = AtenArg::Kind::Device;
      out.text = a.device.type + (a.device.index ? ":" + std::to_string(*a.device.index) : "");
      break;
    default:
      UNSUPPORTED_ERROR() << "argument '" << named.name << "' is " << pt2::argument_key(a.kind)
                          << ", which the ATen fallback cannot pass to the op";
  }
  return out;
}

// The result's shape, whose every symbol must be bound from the inputs: a shape that depends on
// the data (nonzero's unbacked u0) is known only after the call, and IR shapes are fixed before it.
ir::Shape result_shape(const TranslationContext& cx, const std::string& name) {
  const auto& values = cx.program().graph.tensor_values;
  auto it = values.find(name);
  USER_CHECK(it != values.end()) << "result '" << name << "' has no tensor_values entry";
  ir::Shape shape = to_ir_shape(it->second.sizes);
  std::vector<std::string> symbols;
  for (const ir::Expr& d : shape) d.collect_symbols(symbols);
  for (const std::string& s : symbols)
    UNSUPPORTED_CHECK(s.empty() || s[0] != 'u')
        << "result '" << name << "' has a size that depends on the data (" << s
        << "); the ATen fallback needs result shapes known from the input shapes";
  return shape;
}

std::shared_ptr<ir::AtenCall> aten_call_of(TranslationContext& cx, const std::string& overload) {
  auto call = std::make_shared<ir::AtenCall>();
  const size_t dot = overload.rfind('.');
  INTERNAL_CHECK(dot != std::string::npos) << "overload key '" << overload << "' has no overload name";
  call->op = overload.substr(0, dot);
  call->overload = overload.substr(dot + 1);
  cx.record_aten_call(overload);
  return call;
}

}  // namespace

Tensor call_aten(TranslationContext& cx, const std::string& overload, std::vector<ir::AtenArg> args,
                 const std::vector<Tensor>& inputs, ir::DType dtype, const ir::Shape& shape, const std::string& why) {
  UNSUPPORTED_CHECK(cx.aten_calls_allowed())
      << why << " runs " << overload << " through the ATen fallback, which options={'fallback': 'error'} forbids; "
      << "use fallback='aten'";
  auto call = aten_call_of(cx, overload);
  call->args = std::move(args);
  ir::Node n;
  n.op = ir::Op::AtenCall;
  n.dtype = dtype;
  n.shape = shape;
  for (const Tensor& t : inputs) n.inputs.push_back(t.ref);
  n.aten_call = std::move(call);
  return cx.add(std::move(n));
}

void translate_aten_fallback(TranslationContext& cx, const pt2::Node& node, const std::string& overload) {
  auto call = aten_call_of(cx, overload);
  CallInputs inputs;
  for (const pt2::NamedArgument& named : node.inputs) call->args.push_back(convert(cx, named, inputs));

  NodeArgs args(cx, node, overload);
  int result = 0;  // the flat index of the op's tensor results
  auto add_result = [&](const std::string& name) {
    auto per_result = std::make_shared<ir::AtenCall>(*call);
    per_result->output_index = result++;
    ir::Node n;
    n.op = ir::Op::AtenCall;
    n.dtype = to_ir_dtype(cx.program().graph.tensor_values.at(name).dtype, "result '" + name + "'");
    n.shape = result_shape(cx, name);
    n.inputs = inputs.refs;
    n.aten_call = std::move(per_result);
    return cx.add(std::move(n));
  };
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const pt2::Argument& out = node.outputs[i];
    switch (out.kind) {
      case Kind::Tensor: args.set_output(i, add_result(out.tensors.at(0))); break;
      case Kind::Tensors: {
        std::vector<Tensor> values;
        for (const std::string& name : out.tensors) values.push_back(add_result(name));
        args.set_outputs(i, values);
        break;
      }
      case Kind::None: ++result; break;
      default:
        UNSUPPORTED_ERROR() << "result " << i << " is " << pt2::argument_key(out.kind)
                            << "; the ATen fallback returns tensors only";
    }
  }
}

}  // namespace luminal::translator
