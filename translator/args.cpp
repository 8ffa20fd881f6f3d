#include "translator/args.h"

#include "common/error.h"
#include "translator/defaults.h"
#include "translator/sym_expr.h"

namespace luminal::translator {

using Kind = pt2::Argument::Kind;

ir::DType to_ir_dtype(pt2::ScalarType t, const std::string& where) {
  switch (t) {
    case pt2::ScalarType::Float: return ir::DType::F32;
    case pt2::ScalarType::Half: return ir::DType::F16;
    case pt2::ScalarType::BFloat16: return ir::DType::BF16;
    case pt2::ScalarType::Double: return ir::DType::F64;
    case pt2::ScalarType::Char: return ir::DType::I8;
    case pt2::ScalarType::Short: return ir::DType::I16;
    case pt2::ScalarType::Int: return ir::DType::I32;
    case pt2::ScalarType::Long: return ir::DType::I64;
    case pt2::ScalarType::Byte: return ir::DType::U8;
    case pt2::ScalarType::Bool: return ir::DType::Bool;
    default: break;
  }
  UNSUPPORTED_ERROR() << where << ": dtype " << pt2::scalar_type_name(t) << " is not supported";
  return ir::DType::F32;
}

NodeArgs::NodeArgs(TranslationContext& cx, const pt2::Node& node, std::string overload)
    : cx_(cx), node_(node), overload_(std::move(overload)) {}

std::string NodeArgs::where(const std::string& arg) const { return "argument '" + arg + "'"; }

bool NodeArgs::has(const std::string& name) const {
  for (const pt2::NamedArgument& a : node_.inputs)
    if (a.name == name) return true;
  return schema_default(overload_, name) != nullptr;
}

const pt2::Argument& NodeArgs::raw(const std::string& name) const {
  for (const pt2::NamedArgument& a : node_.inputs)
    if (a.name == name) return a.arg;
  const pt2::Argument* d = schema_default(overload_, name);
  USER_CHECK(d != nullptr) << "missing argument '" << name << "'";
  return *d;
}

bool NodeArgs::is_none(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  return a.is_none() || (a.kind == Kind::OptionalTensor && a.tensors.at(0).empty());
}

bool NodeArgs::is_tensor(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  return a.kind == Kind::Tensor || (a.kind == Kind::OptionalTensor && !a.tensors.at(0).empty());
}

Tensor NodeArgs::tensor(const std::string& name) const {
  USER_CHECK(is_tensor(name)) << where(name) << " is " << pt2::argument_key(raw(name).kind) << ", expected a tensor";
  return cx_.tensor(raw(name).tensors.at(0));
}

std::optional<Tensor> NodeArgs::optional_tensor(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return tensor(name);
}

std::vector<Tensor> NodeArgs::tensors(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  USER_CHECK(a.kind == Kind::Tensors) << where(name) << " is " << pt2::argument_key(a.kind)
                                      << ", expected a tensor list";
  std::vector<Tensor> out;
  for (const std::string& t : a.tensors) out.push_back(cx_.tensor(t));
  return out;
}

std::vector<std::optional<Tensor>> NodeArgs::optional_tensors(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  USER_CHECK(a.kind == Kind::Tensors || a.kind == Kind::OptionalTensors)
      << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a list of optional tensors";
  std::vector<std::optional<Tensor>> out;
  for (const std::string& t : a.tensors) out.push_back(t.empty() ? std::nullopt : std::optional<Tensor>(cx_.tensor(t)));
  return out;
}

namespace {
bool is_sym_kind(Kind k) { return k == Kind::SymInt || k == Kind::SymInts; }
}  // namespace

ir::Expr NodeArgs::sym_int(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  if (a.kind == Kind::Int) return ir::Expr(a.ints.at(0));
  USER_CHECK(a.kind == Kind::SymInt) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected an int";
  const pt2::SymArgument& s = a.syms.at(0);
  return s.name ? cx_.sym_int(*s.name) : ir::Expr(s.int_value);
}

std::vector<ir::Expr> NodeArgs::sym_ints(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  std::vector<ir::Expr> out;
  if (a.kind == Kind::Ints) {
    for (int64_t v : a.ints) out.push_back(ir::Expr(v));
    return out;
  }
  USER_CHECK(is_sym_kind(a.kind)) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected an int list";
  for (const pt2::SymArgument& s : a.syms) out.push_back(s.name ? cx_.sym_int(*s.name) : ir::Expr(s.int_value));
  return out;
}

std::optional<ir::Expr> NodeArgs::optional_sym_int(const std::string& name) const {
  if (is_none(name)) return std::nullopt;
  return sym_int(name);
}

int64_t NodeArgs::integer(const std::string& name) const {
  ir::Expr e = sym_int(name);
  UNSUPPORTED_CHECK(e.is_constant()) << where(name) << " is the symbolic value " << e.to_string()
                                     << ", which must be a constant here";
  return e.constant_value();
}

std::vector<int64_t> NodeArgs::integers(const std::string& name) const {
  std::vector<int64_t> out;
  for (const ir::Expr& e : sym_ints(name)) {
    UNSUPPORTED_CHECK(e.is_constant()) << where(name) << " holds the symbolic value " << e.to_string()
                                       << ", which must be a constant here";
    out.push_back(e.constant_value());
  }
  return out;
}

double NodeArgs::floating(const std::string& name) const { return scalar(name).as_double(); }

bool NodeArgs::boolean(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  USER_CHECK(a.kind == Kind::Bool) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a bool";
  return a.bools.at(0);
}

ir::Expr NodeArgs::sym_bool(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  if (a.kind == Kind::Bool) return ir::Expr(int64_t{a.bools.at(0) ? 1 : 0});
  USER_CHECK(a.kind == Kind::SymBool) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a bool";
  const pt2::SymArgument& s = a.syms.at(0);
  return s.name ? cx_.sym_bool(*s.name) : ir::Expr(int64_t{s.bool_value ? 1 : 0});
}

ir::Scalar NodeArgs::scalar(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  switch (a.kind) {
    case Kind::Int: return ir::Scalar::of_int(a.ints.at(0));
    case Kind::Float: return ir::Scalar::of_float(a.floats.at(0));
    case Kind::Bool: return ir::Scalar::of_int(a.bools.at(0) ? 1 : 0);
    case Kind::SymInt: {
      ir::Expr e = sym_int(name);
      // A tensor op with a dynamic size as a number (x * seq_len) would need the size as a value.
      UNSUPPORTED_CHECK(e.is_constant()) << where(name) << " is the symbolic size " << e.to_string()
                                         << " used as a number; not supported yet";
      return ir::Scalar::of_int(e.constant_value());
    }
    case Kind::SymFloat: {
      const pt2::SymArgument& s = a.syms.at(0);
      UNSUPPORTED_CHECK(!s.name) << where(name) << " is the symbolic float '" << *s.name << "'; not supported yet";
      return ir::Scalar::of_float(s.float_value);
    }
    default: break;
  }
  USER_ERROR() << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a number";
  return {};
}

ScalarKind NodeArgs::scalar_kind(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  if (a.kind == Kind::Bool) return ScalarKind::Bool;
  if (a.kind == Kind::Float || a.kind == Kind::SymFloat) return ScalarKind::Float;
  USER_CHECK(a.kind == Kind::Int || a.kind == Kind::SymInt) << where(name) << " is " << pt2::argument_key(a.kind)
                                                            << ", expected a number";
  return ScalarKind::Int;
}

Operand NodeArgs::operand(const std::string& name) const {
  Operand o;
  if (is_tensor(name)) {
    o.tensor = tensor(name);
    return o;
  }
  o.is_number = true;
  o.kind = scalar_kind(name);
  const pt2::Argument& a = raw(name);
  if (a.kind == Kind::SymInt) {
    ir::Expr e = sym_int(name);
    if (!e.is_constant()) {
      o.tensor = size_value(cx_, e, ir::DType::I64);
      return o;
    }
  }
  if (a.kind == Kind::SymFloat && a.syms.at(0).name) {
    const Tensor* value = cx_.float_value(*a.syms.at(0).name);
    UNSUPPORTED_CHECK(value != nullptr) << where(name) << " is the symbolic float '" << *a.syms.at(0).name
                                        << "', computed in a way luminal does not translate yet";
    o.tensor = *value;
    return o;
  }
  o.scalar = scalar(name);
  return o;
}

std::optional<ir::DType> NodeArgs::dtype(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  if (a.is_none()) return std::nullopt;
  USER_CHECK(a.kind == Kind::ScalarType) << where(name) << " is " << pt2::argument_key(a.kind)
                                         << ", expected a dtype";
  return to_ir_dtype(static_cast<pt2::ScalarType>(a.ints.at(0)), where(name));
}

std::string NodeArgs::string(const std::string& name) const {
  const pt2::Argument& a = raw(name);
  USER_CHECK(a.kind == Kind::String) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a string";
  return a.strings.at(0);
}

std::optional<pt2::Device> NodeArgs::device(const std::string& name) const {
  if (!has(name) || is_none(name)) return std::nullopt;
  const pt2::Argument& a = raw(name);
  USER_CHECK(a.kind == Kind::Device) << where(name) << " is " << pt2::argument_key(a.kind) << ", expected a device";
  return a.device;
}

void NodeArgs::require_strided_layout() const {
  if (!has("layout") || is_none("layout")) return;
  const pt2::Argument& a = raw("layout");
  USER_CHECK(a.kind == Kind::Layout) << where("layout") << " is " << pt2::argument_key(a.kind)
                                     << ", expected a layout";
  USER_CHECK(a.ints.at(0) == static_cast<int64_t>(pt2::Layout::Strided))
      << where("layout") << " is layout code " << a.ints.at(0) << "; only torch.strided tensors are supported";
}

std::string NodeArgs::output_name(size_t i) const {
  USER_CHECK(i < node_.outputs.size()) << "has " << node_.outputs.size() << " outputs, output " << i << " is missing";
  const pt2::Argument& a = node_.outputs[i];
  if (a.kind == Kind::Tensor || a.kind == Kind::OptionalTensor) return a.tensors.at(0);
  const bool symbolic = a.kind == Kind::SymInt || a.kind == Kind::SymFloat || a.kind == Kind::SymBool;
  if (symbolic && a.syms.at(0).name) return *a.syms.at(0).name;
  return "";
}

const pt2::TensorMeta& NodeArgs::output_meta(size_t i) const {
  const std::string name = output_name(i);
  const auto& values = cx_.program().graph.tensor_values;
  auto it = values.find(name);
  USER_CHECK(it != values.end()) << "output " << i << " ('" << name << "') has no tensor_values entry";
  return it->second;
}

ir::DType NodeArgs::output_dtype(size_t i) const {
  return to_ir_dtype(output_meta(i).dtype, "output '" + output_name(i) + "'");
}

ir::Shape NodeArgs::output_shape(size_t i) const { return to_ir_shape(output_meta(i).sizes); }

namespace {
// torch's form `m` of a value we computed as `v`. A fresh symbol torch made up for a size that
// depends on data (u1 for x[:t.item()], whose length is clamped to x's) is defined here, from v.
ir::Expr adopt_torch_form(TranslationContext& cx, const ir::Expr& m, const ir::Expr& v) {
  if (m == v || !m.is_symbol() || cx.knows_symbol(m.symbol_name())) return m;
  cx.bind_data_value(m.symbol_name(), size_value(cx, v, ir::DType::I64));
  return m;
}

// See NodeArgs::set_output. torch.export writes metadata consistent with its ops, so a mismatch
// means the archive was edited or damaged (or, for an untouched export, a translation bug): the
// message says both, and which field.
Tensor check_against_meta(TranslationContext& cx, const std::string& name, Tensor value) {
  const auto& values = cx.program().graph.tensor_values;
  auto it = values.find(name);
  if (it == values.end()) return value;
  const std::string field = "graph.tensor_values['" + name + "']";
  const char* advice =
      "; the archive's metadata disagrees with its ops (edited or damaged?): re-export it. If torch.export wrote it "
      "unchanged, please report this as a luminal bug";
  const ir::DType meta_dtype = to_ir_dtype(it->second.dtype, "output '" + name + "'");
  USER_CHECK(meta_dtype == value.dtype) << field << ".dtype is " << ir::dtype_name(meta_dtype)
                                        << ", but the op computes " << ir::dtype_name(value.dtype) << advice;
  ir::Shape meta_shape = to_ir_shape(it->second.sizes);
  USER_CHECK(meta_shape.size() == value.shape().size())
      << field << ".sizes is " << shape_to_string(meta_shape) << ", but the op computes "
      << shape_to_string(value.shape()) << " from its inputs" << advice;
  if (meta_shape == value.shape()) return value;
  for (size_t d = 0; d < meta_shape.size(); ++d) {
    const ir::Expr& m = meta_shape[d];
    const ir::Expr& v = value.shape()[d];
    USER_CHECK(!(m.is_constant() && v.is_constant()) || m == v)
        << field << ".sizes is " << shape_to_string(meta_shape) << ", but the op computes "
        << shape_to_string(value.shape()) << " from its inputs" << advice;
    meta_shape[d] = adopt_torch_form(cx, m, v);
  }
  const ir::View& view = value.ref.view;
  value.ref.view = ir::View(meta_shape, view.strides(), view.offset());
  return value;
}
}  // namespace

void NodeArgs::set_output(size_t i, const Tensor& value) {
  const std::string name = output_name(i);
  if (name.empty()) return;
  cx_.bind_tensor(name, check_against_meta(cx_, name, value));
}

void NodeArgs::set_outputs(size_t i, const std::vector<Tensor>& values) {
  USER_CHECK(i < node_.outputs.size()) << "has " << node_.outputs.size() << " outputs, output " << i << " is missing";
  const pt2::Argument& a = node_.outputs[i];
  USER_CHECK(a.kind == Kind::Tensors && a.tensors.size() == values.size())
      << "output " << i << " is " << pt2::argument_key(a.kind) << " of " << a.tensors.size() << ", expected a list of "
      << values.size() << " tensors";
  for (size_t j = 0; j < values.size(); ++j) cx_.bind_tensor(a.tensors[j], check_against_meta(cx_, a.tensors[j], values[j]));
}

void NodeArgs::set_sym_output(size_t i, const ir::Expr& value) {
  const std::string name = output_name(i);
  // An output the program declares a tensor would stay unbound as one (found by fuzz_compile).
  USER_CHECK(node_.outputs[i].kind == Kind::SymInt && !name.empty())
      << "output " << i << " is " << pt2::argument_key(node_.outputs[i].kind) << ", expected a named SymInt";
  // torch's own form of the value, so sizes built from it compare equal to tensor_values'.
  const auto& values = cx_.program().graph.sym_int_values;
  auto it = values.find(name);
  cx_.bind_sym_int(name, it == values.end() ? value : adopt_torch_form(cx_, to_ir_expr(it->second), value));
}

void NodeArgs::set_sym_bool_output(size_t i, const ir::Expr& holds) {
  const std::string name = output_name(i);
  USER_CHECK(node_.outputs[i].kind == Kind::SymBool && !name.empty())
      << "output " << i << " is " << pt2::argument_key(node_.outputs[i].kind) << ", expected a named SymBool";
  cx_.bind_sym_bool(name, holds);
}

}  // namespace luminal::translator
