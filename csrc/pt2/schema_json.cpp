// models/*.json → ExportedProgram (schema major 8, torch/_export/serde/schema.py).
//
// Field access goes through JsonField, so a malformed document yields a UserError naming the
// entry and the JSON path; optional fields (schema defaults, or absent in older writers) are
// read with find() and keep the struct's default.
#include <map>

#include "common/error.h"
#include "pt2/json_field.h"
#include "pt2/reader.h"

namespace luminal::pt2 {
namespace {

using Kind = Argument::Kind;

Argument parse_argument(const JsonField& field, const std::string& owner);
Graph parse_graph(const JsonField& field);

// {"as_name": ...} | {"as_int"|"as_float"|"as_bool": ...}: the three Sym*Argument unions.
SymArgument parse_sym_argument(const JsonField& field, const char* constant_key) {
  auto [key, value] = field.union_member();
  SymArgument sym;
  if (key == "as_name") {
    sym.name = value.as_string();
  } else if (key != constant_key) {
    field.fail("unknown key '" + key + "' (expected 'as_name' or '" + constant_key + "')");
  } else if (key == "as_int") {
    sym.int_value = value.as_int();
  } else if (key == "as_float") {
    sym.float_value = value.as_float();
  } else {
    sym.bool_value = value.as_bool();
  }
  return sym;
}

SymExpr parse_sym_expr(const JsonField& field) {
  SymExpr expr;
  expr.expr_str = field.at("expr_str").as_string();
  if (auto hint = field.find("hint")) {
    auto [key, value] = hint->union_member();
    // Only integer hints size anything; bool/float hints are accepted and dropped.
    if (key == "as_int") expr.hint = value.as_int();
  }
  return expr;
}

// SymInt/SymFloat/SymBool: {"as_expr": SymExpr} | {<constant_key>: value}.
template <typename Sym, typename ReadConstant>
Sym parse_sym(const JsonField& field, const char* constant_key, ReadConstant read_constant) {
  auto [key, value] = field.union_member();
  Sym sym;
  if (key == "as_expr") {
    sym.expr = parse_sym_expr(value);
  } else if (key == constant_key) {
    sym.value = read_constant(value);
  } else {
    field.fail("unknown key '" + key + "' (expected 'as_expr' or '" + constant_key + "')");
  }
  return sym;
}

SymInt parse_sym_int(const JsonField& field) {
  return parse_sym<SymInt>(field, "as_int", [](const JsonField& v) { return v.as_int(); });
}

std::vector<SymInt> parse_sym_int_list(const JsonField& field) {
  std::vector<SymInt> values;
  field.for_each_item([&](const JsonField& item) { values.push_back(parse_sym_int(item)); });
  return values;
}

Device parse_device(const JsonField& field) {
  Device device;
  device.type = field.at("type").as_string();
  if (auto index = field.find("index")) device.index = index->as_int();
  return device;
}

int64_t parse_enum_code(const JsonField& field, int64_t max_code, const char* enum_name) {
  int64_t code = field.as_int();
  if (code < 0 || code > max_code) {
    field.fail("unknown " + std::string(enum_name) + " code " + std::to_string(code));
  }
  return code;
}

std::string parse_tensor_name(const JsonField& field) { return field.at("name").as_string(); }

// OptionalTensorArgument: {"as_tensor": {"name"}} | {"as_none": ...}; None is "".
std::string parse_optional_tensor_name(const JsonField& field) {
  auto [key, value] = field.union_member();
  if (key == "as_tensor") return parse_tensor_name(value);
  if (key != "as_none") field.fail("unknown key '" + key + "' (expected 'as_tensor' or 'as_none')");
  return "";
}

CustomObjArgument parse_custom_obj(const JsonField& field) {
  return {field.at("name").as_string(), field.at("class_fqn").as_string()};
}

template <typename T, typename ParseItem>
std::vector<T> parse_list(const JsonField& field, ParseItem parse_item) {
  std::vector<T> values;
  field.for_each_item([&](const JsonField& item) { values.push_back(parse_item(item)); });
  return values;
}

const std::map<std::string, Kind>& argument_kinds_by_key() {
  static const std::map<std::string, Kind> kinds = [] {
    std::map<std::string, Kind> by_key;
    for (int k = static_cast<int>(Kind::None); k <= static_cast<int>(Kind::StringToArgument); ++k) {
      by_key[argument_key(static_cast<Kind>(k))] = static_cast<Kind>(k);
    }
    return by_key;
  }();
  return kinds;
}

void parse_tensor_payload(Argument& arg, const JsonField& value) {
  switch (arg.kind) {
    case Kind::Tensor: arg.tensors = {parse_tensor_name(value)}; break;
    case Kind::Tensors: arg.tensors = parse_list<std::string>(value, parse_tensor_name); break;
    case Kind::OptionalTensor: arg.tensors = {parse_optional_tensor_name(value)}; break;
    case Kind::OptionalTensors:
      arg.tensors = parse_list<std::string>(value, parse_optional_tensor_name);
      break;
    case Kind::NestedTensors:
      arg.nested_tensors = parse_list<std::vector<std::string>>(value, [](const JsonField& inner) {
        return parse_list<std::string>(inner, parse_tensor_name);
      });
      break;
    default: break;
  }
}

void parse_scalar_payload(Argument& arg, const JsonField& value) {
  auto read_int = [](const JsonField& v) { return v.as_int(); };
  auto read_float = [](const JsonField& v) { return v.as_float(); };
  switch (arg.kind) {
    case Kind::Int: arg.ints = {value.as_int()}; break;
    case Kind::Ints: arg.ints = value.as_int_list(); break;
    case Kind::Float: arg.floats = {value.as_float()}; break;
    case Kind::Floats: arg.floats = value.as_float_list(); break;
    case Kind::Bool: arg.bools = {value.as_bool()}; break;
    case Kind::Bools:
      arg.bools = parse_list<bool>(value, [](const JsonField& v) { return v.as_bool(); });
      break;
    case Kind::String: arg.strings = {value.as_string()}; break;
    case Kind::Operator: arg.strings = {value.as_string()}; break;
    case Kind::Strings:
      arg.strings =
          parse_list<std::string>(value, [](const JsonField& v) { return v.as_string(); });
      break;
    case Kind::Complex:
      arg.floats = {value.at("real").as_float(), value.at("imag").as_float()};
      break;
    case Kind::IntLists:
      arg.int_lists = parse_list<std::vector<int64_t>>(
          value, [&](const JsonField& v) { return parse_list<int64_t>(v, read_int); });
      break;
    case Kind::FloatLists:
      arg.float_lists = parse_list<std::vector<double>>(
          value, [&](const JsonField& v) { return parse_list<double>(v, read_float); });
      break;
    default: break;
  }
}

void parse_symbolic_payload(Argument& arg, const JsonField& value) {
  auto sym_list = [&](const char* constant_key) {
    return parse_list<SymArgument>(
        value, [&](const JsonField& v) { return parse_sym_argument(v, constant_key); });
  };
  switch (arg.kind) {
    case Kind::SymInt: arg.syms = {parse_sym_argument(value, "as_int")}; break;
    case Kind::SymInts: arg.syms = sym_list("as_int"); break;
    case Kind::SymFloat: arg.syms = {parse_sym_argument(value, "as_float")}; break;
    case Kind::SymFloats: arg.syms = sym_list("as_float"); break;
    case Kind::SymBool: arg.syms = {parse_sym_argument(value, "as_bool")}; break;
    case Kind::SymBools: arg.syms = sym_list("as_bool"); break;
    default: break;
  }
}

void parse_structured_payload(Argument& arg, const JsonField& value, const std::string& owner) {
  switch (arg.kind) {
    case Kind::ScalarType:
      arg.ints = {static_cast<int64_t>(parse_scalar_type(value, owner))};
      break;
    case Kind::MemoryFormat:
      arg.ints = {
          parse_enum_code(value, static_cast<int64_t>(MemoryFormat::Preserve), "memory format")};
      break;
    case Kind::Layout:
      arg.ints = {parse_enum_code(value, static_cast<int64_t>(Layout::Strided), "layout")};
      break;
    case Kind::Device: arg.device = parse_device(value); break;
    case Kind::CustomObj: arg.custom_obj = parse_custom_obj(value); break;
    case Kind::Graph:
      arg.graph = std::make_shared<GraphArgument>();
      arg.graph->name = value.at("name").as_string();
      arg.graph->graph = parse_graph(value.at("graph"));
      break;
    case Kind::StringToArgument:
      value.for_each_member([&](const std::string& key, const JsonField& item) {
        arg.string_to_argument[key] =
            std::make_shared<Argument>(parse_argument(item, owner + " key '" + key + "'"));
      });
      break;
    default: break;
  }
}

// Argument is a tagged union: exactly one "as_*" key. `owner` says whose argument this is,
// because an unknown kind is most useful reported against the node that used it.
Argument parse_argument(const JsonField& field, const std::string& owner) {
  auto [key, value] = field.union_member();
  const auto& kinds = argument_kinds_by_key();
  auto kind = kinds.find(key);
  if (kind == kinds.end()) {
    throw_error(ErrorKind::User, field.where() + ": " + owner + ": unknown Argument kind '" + key +
                                     "' at " + field.path());
  }
  Argument arg;
  arg.kind = kind->second;
  parse_tensor_payload(arg, value);
  parse_scalar_payload(arg, value);
  parse_symbolic_payload(arg, value);
  parse_structured_payload(arg, value, owner);
  return arg;
}

std::vector<Argument> parse_argument_list(const JsonField& field, const std::string& owner) {
  std::vector<Argument> args;
  field.for_each_item([&](const JsonField& item) {
    args.push_back(parse_argument(item, owner + " " + std::to_string(args.size())));
  });
  return args;
}

Node parse_node(const JsonField& field, size_t index) {
  Node node;
  node.target = field.at("target").as_string();
  if (auto name = field.find("name")) node.name = name->as_string();
  std::string owner = "node " +
                      (node.name.empty() ? std::to_string(index) : "'" + node.name + "'") + " (" +
                      node.target + ")";
  field.at("inputs").for_each_item([&](const JsonField& input) {
    NamedArgument named;
    named.name = input.at("name").as_string();
    named.arg = parse_argument(input.at("arg"), owner + " input '" + named.name + "'");
    // kind is Optional in the schema; writers before it existed only emitted positionals.
    if (auto kind = input.find("kind")) {
      named.kind = static_cast<ArgumentKind>(
          parse_enum_code(*kind, static_cast<int64_t>(ArgumentKind::Keyword), "argument kind"));
    }
    node.inputs.push_back(std::move(named));
  });
  node.outputs = parse_argument_list(field.at("outputs"), owner + " output");
  if (auto metadata = field.find("metadata")) {
    metadata->for_each_member([&](const std::string& key, const JsonField& value) {
      node.metadata[key] = value.as_string();
    });
  }
  return node;
}

template <typename Value, typename ParseValue>
std::map<std::string, Value> parse_optional_map(const JsonField& parent, const char* key,
                                                ParseValue parse_value) {
  std::map<std::string, Value> values;
  if (auto field = parent.find(key)) {
    field->for_each_member([&](const std::string& name, const JsonField& value) {
      values.emplace(name, parse_value(name, value));
    });
  }
  return values;
}

Graph parse_graph(const JsonField& field) {
  Graph graph;
  graph.inputs = parse_argument_list(field.at("inputs"), "graph input");
  graph.outputs = parse_argument_list(field.at("outputs"), "graph output");
  field.at("nodes").for_each_item(
      [&](const JsonField& node) { graph.nodes.push_back(parse_node(node, graph.nodes.size())); });
  field.at("tensor_values").for_each_member([&](const std::string& name, const JsonField& meta) {
    graph.tensor_values.emplace(name, parse_tensor_meta(meta, "tensor '" + name + "'"));
  });
  graph.sym_int_values = parse_optional_map<SymInt>(
      field, "sym_int_values",
      [](const std::string&, const JsonField& v) { return parse_sym_int(v); });
  graph.sym_bool_values = parse_optional_map<SymBool>(
      field, "sym_bool_values", [](const std::string&, const JsonField& v) {
        return parse_sym<SymBool>(v, "as_bool", [](const JsonField& b) { return b.as_bool(); });
      });
  graph.sym_float_values = parse_optional_map<SymFloat>(
      field, "sym_float_values", [](const std::string&, const JsonField& v) {
        return parse_sym<SymFloat>(v, "as_float", [](const JsonField& f) { return f.as_float(); });
      });
  graph.custom_obj_values = parse_optional_map<CustomObjArgument>(
      field, "custom_obj_values",
      [](const std::string&, const JsonField& v) { return parse_custom_obj(v); });
  if (auto single = field.find("is_single_tensor_return")) {
    graph.is_single_tensor_return = single->as_bool();
  }
  return graph;
}

// Specs other than user_input/user_output carry a bare TensorArgument ({"name": ...}).
Argument tensor_argument(const JsonField& field) {
  Argument arg;
  arg.kind = Kind::Tensor;
  arg.tensors = {parse_tensor_name(field)};
  return arg;
}

InputSpec parse_input_spec(const JsonField& field, size_t index) {
  auto [key, spec] = field.union_member();
  std::string owner = "input spec " + std::to_string(index) + " (" + key + ")";
  InputSpec input;
  using K = InputSpec::Kind;
  if (key == "user_input") {
    input.kind = K::UserInput;
    input.arg = parse_argument(spec.at("arg"), owner);
  } else if (key == "parameter") {
    input.kind = K::Parameter;
    input.arg = tensor_argument(spec.at("arg"));
    input.target = spec.at("parameter_name").as_string();
  } else if (key == "buffer") {
    input.kind = K::Buffer;
    input.arg = tensor_argument(spec.at("arg"));
    input.target = spec.at("buffer_name").as_string();
    input.persistent = spec.at("persistent").as_bool();
  } else if (key == "tensor_constant") {
    input.kind = K::TensorConstant;
    input.arg = tensor_argument(spec.at("arg"));
    input.target = spec.at("tensor_constant_name").as_string();
  } else if (key == "custom_obj") {
    input.kind = K::CustomObj;
    input.arg.kind = Kind::CustomObj;
    input.arg.custom_obj = parse_custom_obj(spec.at("arg"));
    input.target = spec.at("custom_obj_name").as_string();
  } else if (key == "token") {
    input.kind = K::Token;
    input.arg = tensor_argument(spec.at("arg"));
  } else if (key == "constant_input") {
    // ConstantValue's keys (as_none/as_int/as_float/as_string/as_bool) are Argument keys.
    input.kind = K::ConstantInput;
    input.target = spec.at("name").as_string();
    input.arg = parse_argument(spec.at("value"), owner);
  } else {
    field.fail("unknown input spec kind '" + key + "'");
  }
  return input;
}

OutputSpec parse_output_spec(const JsonField& field, size_t index) {
  auto [key, spec] = field.union_member();
  using K = OutputSpec::Kind;
  // kind and the field naming its target, for the specs that carry a TensorArgument.
  static const std::map<std::string, std::pair<K, const char*>> kTensorSpecs = {
      {"loss_output", {K::LossOutput, nullptr}},
      {"buffer_mutation", {K::BufferMutation, "buffer_name"}},
      {"gradient_to_parameter", {K::GradientToParameter, "parameter_name"}},
      {"gradient_to_user_input", {K::GradientToUserInput, "user_input_name"}},
      {"user_input_mutation", {K::UserInputMutation, "user_input_name"}},
      {"token", {K::Token, nullptr}},
      {"parameter_mutation", {K::ParameterMutation, "parameter_name"}},
  };
  OutputSpec output;
  if (key == "user_output") {
    output.kind = K::UserOutput;
    output.arg =
        parse_argument(spec.at("arg"), "output spec " + std::to_string(index) + " (user_output)");
    return output;
  }
  auto known = kTensorSpecs.find(key);
  if (known == kTensorSpecs.end()) field.fail("unknown output spec kind '" + key + "'");
  output.kind = known->second.first;
  output.arg = tensor_argument(spec.at("arg"));
  if (const char* target_field = known->second.second)
    output.target = spec.at(target_field).as_string();
  return output;
}

GraphSignature parse_signature(const JsonField& field) {
  GraphSignature signature;
  field.at("input_specs").for_each_item([&](const JsonField& spec) {
    signature.input_specs.push_back(parse_input_spec(spec, signature.input_specs.size()));
  });
  field.at("output_specs").for_each_item([&](const JsonField& spec) {
    signature.output_specs.push_back(parse_output_spec(spec, signature.output_specs.size()));
  });
  return signature;
}

RangeConstraint parse_range_constraint(const JsonField& field) {
  RangeConstraint range;
  if (auto min_val = field.find("min_val")) range.min_val = min_val->as_int();
  if (auto max_val = field.find("max_val")) range.max_val = max_val->as_int();
  return range;
}

// Checked before anything else, so a future schema fails on its version, not on some field
// whose shape changed.
SchemaVersion parse_schema_version(const JsonField& root) {
  JsonField field = root.at("schema_version");
  SchemaVersion version;
  version.major =
      static_cast<int>(parse_enum_code(field.at("major"), 1 << 20, "schema major version"));
  if (auto minor = field.find("minor")) {
    version.minor = static_cast<int>(parse_enum_code(*minor, 1 << 20, "schema minor version"));
  }
  if (version.major != kSupportedSchemaMajor) {
    throw_error(ErrorKind::User,
                root.where() + ": schema version " + std::to_string(version.major) + "." +
                    std::to_string(version.minor) +
                    " is not supported (supported: " + std::to_string(kSupportedSchemaMajor) + ")");
  }
  return version;
}

}  // namespace

ScalarType parse_scalar_type(const JsonField& field, const std::string& owner) {
  int64_t code = field.as_int();
  if (code < 0 || code > 1000 || !is_known_scalar_type(static_cast<int>(code))) {
    throw_error(ErrorKind::User, field.where() + ": " + owner + ": unknown dtype code " +
                                     std::to_string(code) + " at " + field.path());
  }
  return static_cast<ScalarType>(code);
}

TensorMeta parse_tensor_meta(const JsonField& field, const std::string& owner) {
  TensorMeta meta;
  meta.dtype = parse_scalar_type(field.at("dtype"), owner);
  meta.sizes = parse_sym_int_list(field.at("sizes"));
  meta.strides = parse_sym_int_list(field.at("strides"));
  if (meta.strides.size() != meta.sizes.size()) {
    field.fail(owner + " has " + std::to_string(meta.sizes.size()) + " sizes but " +
               std::to_string(meta.strides.size()) + " strides");
  }
  meta.storage_offset = parse_sym_int(field.at("storage_offset"));
  if (auto requires_grad = field.find("requires_grad"))
    meta.requires_grad = requires_grad->as_bool();
  if (auto device = field.find("device")) meta.device = parse_device(*device);
  if (auto layout = field.find("layout")) {
    meta.layout = static_cast<Layout>(
        parse_enum_code(*layout, static_cast<int64_t>(Layout::Strided), "layout"));
  }
  return meta;
}

ExportedProgram parse_exported_program(const std::string& json_text, const std::string& where) {
  JsonDocument document(json_text, where);
  JsonField root = document.root();
  ExportedProgram program;
  program.schema_version = parse_schema_version(root);
  JsonField graph_module = root.at("graph_module");
  program.graph = parse_graph(graph_module.at("graph"));
  program.signature = parse_signature(graph_module.at("signature"));
  program.range_constraints = parse_optional_map<RangeConstraint>(
      root, "range_constraints",
      [](const std::string&, const JsonField& v) { return parse_range_constraint(v); });
  program.opset_version = parse_optional_map<int64_t>(
      root, "opset_version", [](const std::string&, const JsonField& v) { return v.as_int(); });
  if (auto verifiers = root.find("verifiers")) {
    verifiers->for_each_item(
        [&](const JsonField& v) { program.verifiers.push_back(v.as_string()); });
  }
  if (auto version = root.find("torch_version")) program.torch_version = version->as_string();
  return program;
}

}  // namespace luminal::pt2
