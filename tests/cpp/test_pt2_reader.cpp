// Reads the fixtures tests/pt2/make_fixtures.py exported with torch 2.13 and checks them against
// the facts that script recorded from the same programs (expected_facts.json).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "pt2/reader.h"

namespace luminal::pt2 {
namespace {

std::string fixture_path(const std::string& name) {
  return std::string(LUMINAL_TEST_DATA_DIR) + "/" + name;
}

std::vector<uint8_t> read_fixture_bytes(const std::string& name) {
  std::ifstream file(fixture_path(name), std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

const nlohmann::json& facts() {
  static const nlohmann::json parsed = [] {
    std::ifstream file(fixture_path("expected_facts.json"));
    return nlohmann::json::parse(file);
  }();
  return parsed;
}

std::vector<float> first_floats(const StoredTensor& tensor, size_t count) {
  std::vector<float> values(count);
  std::memcpy(values.data(), tensor.bytes.data() + tensor.storage_offset * 4, count * 4);
  return values;
}

void expect_first_floats(const StoredTensor& tensor, const nlohmann::json& expected) {
  std::vector<float> actual = first_floats(tensor, expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i], static_cast<float>(expected[i].get<double>()))
        << tensor.fqn << "[" << i << "]";
  }
}

const char* input_kind_name(InputSpec::Kind kind) {
  switch (kind) {
    case InputSpec::Kind::UserInput: return "USER_INPUT";
    case InputSpec::Kind::Parameter: return "PARAMETER";
    case InputSpec::Kind::Buffer: return "BUFFER";
    case InputSpec::Kind::TensorConstant: return "CONSTANT_TENSOR";
    case InputSpec::Kind::CustomObj: return "CUSTOM_OBJ";
    case InputSpec::Kind::Token: return "TOKEN";
    case InputSpec::Kind::ConstantInput: return "CONSTANT_INPUT";
  }
  return "?";
}

const char* output_kind_name(OutputSpec::Kind kind) {
  switch (kind) {
    case OutputSpec::Kind::UserOutput: return "USER_OUTPUT";
    case OutputSpec::Kind::LossOutput: return "LOSS_OUTPUT";
    case OutputSpec::Kind::BufferMutation: return "BUFFER_MUTATION";
    case OutputSpec::Kind::GradientToParameter: return "GRADIENT_TO_PARAMETER";
    case OutputSpec::Kind::GradientToUserInput: return "GRADIENT_TO_USER_INPUT";
    case OutputSpec::Kind::UserInputMutation: return "USER_INPUT_MUTATION";
    case OutputSpec::Kind::Token: return "TOKEN";
    case OutputSpec::Kind::ParameterMutation: return "PARAMETER_MUTATION";
  }
  return "?";
}

// The program facts every fixture records: node count, first target, signature kinds in order.
void expect_program_facts(const ExportedProgram& program, const nlohmann::json& expected) {
  EXPECT_EQ(program.schema_version.major, 8);
  ASSERT_EQ(program.graph.nodes.size(), expected["node_count"].get<size_t>());
  EXPECT_EQ(program.graph.nodes[0].target,
            "torch.ops." + expected["first_target"].get<std::string>());
  std::vector<std::string> inputs, outputs;
  for (const InputSpec& spec : program.signature.input_specs)
    inputs.push_back(input_kind_name(spec.kind));
  for (const OutputSpec& spec : program.signature.output_specs)
    outputs.push_back(output_kind_name(spec.kind));
  EXPECT_EQ(inputs, expected["input_spec_kinds"].get<std::vector<std::string>>());
  EXPECT_EQ(outputs, expected["output_spec_kinds"].get<std::vector<std::string>>());
}

const Node& node_named(const ExportedProgram& program, const std::string& name) {
  for (const Node& node : program.graph.nodes) {
    if (node.name == name) return node;
  }
  throw std::runtime_error("no node " + name);
}

std::vector<int64_t> concrete(const std::vector<SymInt>& syms) {
  std::vector<int64_t> values;
  for (const SymInt& s : syms) values.push_back(s.value.value_or(-1));
  return values;
}

TEST(Pt2Reader, MlpGraph) {
  Pt2Program mlp = read_pt2_file(fixture_path("mlp.pt2"));
  const ExportedProgram& program = mlp.program;
  expect_program_facts(program, facts()["mlp"]);
  std::vector<std::string> targets;
  for (const Node& node : program.graph.nodes) targets.push_back(node.target);
  EXPECT_EQ(targets, (std::vector<std::string>{
                         "torch.ops.aten.permute.default", "torch.ops.aten.addmm.default",
                         "torch.ops.aten.relu.default", "torch.ops.aten.permute.default",
                         "torch.ops.aten.addmm.default"}));
  const Node& addmm = program.graph.nodes[1];
  ASSERT_EQ(addmm.inputs.size(), 3u);
  EXPECT_EQ(addmm.inputs[0].name, "self");
  EXPECT_EQ(addmm.inputs[0].arg.kind, Argument::Kind::Tensor);
  EXPECT_EQ(addmm.inputs[0].arg.tensors[0], "p_fc1_bias");
  EXPECT_EQ(addmm.inputs[1].arg.tensors[0], "x");
  EXPECT_EQ(addmm.inputs[2].kind, ArgumentKind::Positional);
  const Node& permute = program.graph.nodes[0];
  EXPECT_EQ(permute.inputs[1].arg.kind, Argument::Kind::Ints);
  EXPECT_EQ(permute.inputs[1].arg.ints, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(permute.metadata.count("stack_trace"));
  EXPECT_TRUE(permute.metadata.count("nn_module_stack"));

  const TensorMeta& x = program.graph.tensor_values.at("x");
  EXPECT_EQ(x.dtype, ScalarType::Float);
  EXPECT_EQ(concrete(x.sizes), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(concrete(x.strides), (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(x.device.type, "cpu");
  EXPECT_FALSE(x.device.index.has_value());
  EXPECT_EQ(x.layout, Layout::Strided);
  EXPECT_EQ(concrete(program.graph.tensor_values.at("addmm_1").sizes),
            (std::vector<int64_t>{4, 4}));
  ASSERT_EQ(program.graph.outputs.size(), 1u);
  EXPECT_EQ(program.graph.outputs[0].tensors[0], "addmm_1");
  EXPECT_EQ(program.signature.input_specs[0].target, "fc1.weight");
  EXPECT_EQ(program.signature.input_specs[0].arg.tensors[0], "p_fc1_weight");
  EXPECT_EQ(program.opset_version.at("aten"), 10);
  EXPECT_TRUE(program.range_constraints.empty());
  EXPECT_EQ(program.torch_version, facts()["torch_version"].get<std::string>());
}

TEST(Pt2Reader, MlpWeightsAreTheScriptsBytes) {
  Pt2Program mlp = read_pt2_file(fixture_path("mlp.pt2"));
  ASSERT_EQ(mlp.weights.size(), 4u);
  EXPECT_TRUE(mlp.constants.empty());
  const StoredTensor& fc1 = mlp.weights.at("fc1.weight");
  EXPECT_EQ(fc1.path_name, "weight_0");
  EXPECT_TRUE(fc1.is_param);
  EXPECT_EQ(fc1.dtype, ScalarType::Float);
  EXPECT_EQ(fc1.sizes, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(fc1.strides, (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(fc1.bytes.size(), 32u * 16u * 4u);
  expect_first_floats(fc1, facts()["mlp"]["fc1.weight"]);
  expect_first_floats(mlp.weights.at("fc2.bias"), facts()["mlp"]["fc2.bias"]);
}

TEST(Pt2Reader, BytesAndFileAgree) {
  std::vector<uint8_t> bytes = read_fixture_bytes("mlp.pt2");
  Pt2Program from_bytes = read_pt2_bytes(bytes.data(), bytes.size());
  Pt2Program from_file = read_pt2_file(fixture_path("mlp.pt2"));
  EXPECT_EQ(from_bytes.program.graph.nodes.size(), from_file.program.graph.nodes.size());
  EXPECT_EQ(from_bytes.weights.at("fc2.weight").bytes, from_file.weights.at("fc2.weight").bytes);
}

TEST(Pt2Reader, DeflateArchiveMatchesStored) {
  Pt2Program stored = read_pt2_file(fixture_path("mlp.pt2"));
  Pt2Program deflated = read_pt2_file(fixture_path("mlp_deflate.pt2"));
  EXPECT_EQ(deflated.program.graph.nodes.size(), stored.program.graph.nodes.size());
  ASSERT_EQ(deflated.weights.size(), stored.weights.size());
  for (const auto& [fqn, tensor] : stored.weights)
    EXPECT_EQ(deflated.weights.at(fqn).bytes, tensor.bytes) << fqn;
}

TEST(Pt2Reader, ExternallyBoundWeightsAreSkipped) {
  ReadOptions options;
  options.externally_bound = {"fc1.weight", "fc2.bias"};
  Pt2Program mlp = read_pt2_file(fixture_path("mlp.pt2"), options);
  EXPECT_EQ(mlp.weights.size(), 2u);
  EXPECT_FALSE(mlp.weights.count("fc1.weight"));
  EXPECT_TRUE(mlp.weights.count("fc1.bias"));
}

TEST(Pt2Reader, ExplicitModelName) {
  ReadOptions options;
  options.model_name = "model";
  EXPECT_EQ(read_pt2_file(fixture_path("mlp.pt2"), options).weights.size(), 4u);
}

TEST(Pt2Reader, SigDemoSignature) {
  Pt2Program sig = read_pt2_file(fixture_path("sigdemo.pt2"));
  const GraphSignature& signature = sig.program.signature;
  expect_program_facts(sig.program, facts()["sigdemo"]);
  EXPECT_EQ(signature.input_specs[0].target, "w");
  EXPECT_EQ(signature.input_specs[1].target, "running");
  EXPECT_TRUE(signature.input_specs[1].persistent);
  EXPECT_EQ(signature.input_specs[2].target, "scratch");
  EXPECT_FALSE(signature.input_specs[2].persistent);
  EXPECT_EQ(signature.input_specs[3].target, "const");
  EXPECT_EQ(signature.input_specs[3].arg.tensors[0], "c_const");
  EXPECT_EQ(signature.input_specs[4].arg.kind, Argument::Kind::Tensor);
  EXPECT_EQ(signature.input_specs[5].arg.tensors[0], "y");
  EXPECT_EQ(signature.output_specs[0].target, "running");
  EXPECT_EQ(signature.output_specs[1].target, "y");
  EXPECT_EQ(signature.output_specs[2].arg.kind, Argument::Kind::Tensor);

  // Parameters and persistent buffers are weights; non-persistent buffers and constants are not.
  EXPECT_EQ(sig.weights.size(), 2u);
  expect_first_floats(sig.weights.at("w"), facts()["sigdemo"]["w"]);
  EXPECT_FALSE(sig.weights.at("running").is_param);
  ASSERT_EQ(sig.constants.size(), 2u);
  expect_first_floats(sig.constants.at("const"), facts()["sigdemo"]["const"]);
  expect_first_floats(sig.constants.at("scratch"), facts()["sigdemo"]["scratch"]);
}

TEST(Pt2Reader, SigDemoArguments) {
  ExportedProgram program = read_pt2_file(fixture_path("sigdemo.pt2")).program;
  const Node& layer_norm = node_named(program, "native_layer_norm");
  EXPECT_EQ(layer_norm.inputs[2].name, "weight");
  EXPECT_TRUE(layer_norm.inputs[2].arg.is_none());
  EXPECT_TRUE(layer_norm.inputs[3].arg.is_none());
  EXPECT_EQ(layer_norm.inputs[4].arg.floats[0], 1e-05);
  ASSERT_EQ(layer_norm.outputs.size(), 3u);
  EXPECT_EQ(layer_norm.outputs[1].tensors[0], "native_layer_norm_unused_1");

  const Node& clamp = node_named(program, "clamp");
  ASSERT_EQ(clamp.inputs.size(), 2u);  // max omitted, not None
  EXPECT_EQ(clamp.inputs[1].arg.kind, Argument::Kind::Float);
  EXPECT_EQ(clamp.inputs[1].arg.floats[0], -1.0);

  const Node& scalar_tensor = node_named(program, "scalar_tensor");
  EXPECT_EQ(scalar_tensor.inputs[0].arg.floats[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(scalar_tensor.inputs[1].kind, ArgumentKind::Keyword);
  EXPECT_EQ(scalar_tensor.inputs[1].arg.kind, Argument::Kind::Device);
  EXPECT_EQ(scalar_tensor.inputs[1].arg.device.type, "cpu");

  const Node& slice = node_named(program, "slice_1");
  EXPECT_EQ(slice.inputs[3].name, "end");
  EXPECT_EQ(slice.inputs[3].arg.ints[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(node_named(program, "sum_1").inputs[1].arg.ints, std::vector<int64_t>{});
}

TEST(Pt2Reader, DynamicShapes) {
  Pt2Program dyn = read_pt2_file(fixture_path("dyn_mlp.pt2"));
  expect_program_facts(dyn.program, facts()["dyn_mlp"]);
  ASSERT_EQ(dyn.program.range_constraints.size(), 1u);
  const auto& [symbol, range] = *dyn.program.range_constraints.begin();
  EXPECT_EQ(range.min_val, 2);
  EXPECT_EQ(range.max_val, 1024);
  const TensorMeta& x = dyn.program.graph.tensor_values.at("x");
  ASSERT_FALSE(x.sizes[0].is_concrete());
  EXPECT_NE(x.sizes[0].expr.expr_str.find("Symbol('" + symbol + "'"), std::string::npos);
  EXPECT_EQ(x.sizes[0].expr.hint, 4);
  EXPECT_EQ(x.sizes[1].value, 16);
  expect_first_floats(dyn.weights.at("fc1.weight"), facts()["dyn_mlp"]["fc1.weight"]);
}

TEST(Pt2Reader, TinyLlama) {
  Pt2Program llama = read_pt2_file(fixture_path("llama.pt2"));
  expect_program_facts(llama.program, facts()["llama"]);
  size_t softmaxes = 0, bmms = 0;
  for (const Node& node : llama.program.graph.nodes) {
    softmaxes += node.target == "torch.ops.aten._softmax.default";
    bmms += node.target == "torch.ops.aten.bmm.default";
  }
  EXPECT_EQ(softmaxes, 2u);  // one per layer: sdpa decomposed into math
  EXPECT_EQ(bmms, 4u);
  EXPECT_EQ(llama.weights.size(), 21u);
  const StoredTensor& embed = llama.weights.at("model.model.embed_tokens.weight");
  EXPECT_EQ(embed.sizes, (std::vector<int64_t>{128, 64}));
  expect_first_floats(embed, facts()["llama"]["model.model.embed_tokens.weight"]);
  EXPECT_EQ(llama.constants.size(), 2u);
  EXPECT_EQ(llama.constants.at("model.model.rotary_emb.inv_freq").sizes, std::vector<int64_t>{8});
  EXPECT_EQ(llama.program.graph.tensor_values.at("input_ids").dtype, ScalarType::Long);
}

TEST(Pt2Reader, EnumNames) {
  EXPECT_EQ(scalar_type_name(ScalarType::Float), "FLOAT");
  EXPECT_EQ(scalar_type_name(static_cast<ScalarType>(99)), "UNKNOWN(99)");
  EXPECT_TRUE(is_known_scalar_type(13));
  EXPECT_FALSE(is_known_scalar_type(14));
  EXPECT_EQ(scalar_type_size(ScalarType::BFloat16), 2);
  EXPECT_EQ(scalar_type_size(ScalarType::ComplexDouble), 16);
  EXPECT_STREQ(argument_key(Argument::Kind::OptionalTensors), "as_optional_tensors");
  EXPECT_STREQ(argument_key(Argument::Kind::StringToArgument), "as_string_to_argument");
}

// Hand-written schema-8 JSON with one input per Argument kind (each input named after its
// key) and every signature kind: the fixtures only exercise what torch emits for them.
nlohmann::json every_argument_kind_program() {
  using nlohmann::json;
  json args = {
      {"as_none", true},
      {"as_tensor", {{"name", "x"}}},
      {"as_tensors", json::array({{{"name", "x"}}, {{"name", "y"}}})},
      {"as_optional_tensor", {{"as_none", true}}},
      {"as_optional_tensors", json::array({{{"as_tensor", {{"name", "x"}}}}, {{"as_none", true}}})},
      {"as_int", std::numeric_limits<int64_t>::min()},
      {"as_ints", json::array({1, std::numeric_limits<int64_t>::max()})},
      {"as_float", "NaN"},
      {"as_floats", json::array({1.5, "Infinity", 2})},
      {"as_bool", true},
      {"as_bools", json::array({true, false})},
      {"as_string", "mean"},
      {"as_strings", json::array({"a", "b"})},
      {"as_sym_int", {{"as_name", "sym_size_int"}}},
      {"as_sym_ints", json::array({{{"as_name", "s0"}}, {{"as_int", 3}}})},
      {"as_sym_float", {{"as_float", 0.5}}},
      {"as_sym_floats", json::array({{{"as_name", "f0"}}})},
      {"as_sym_bool", {{"as_bool", true}}},
      {"as_sym_bools", json::array({{{"as_name", "b0"}}})},
      {"as_scalar_type", 13},
      {"as_memory_format", 2},
      {"as_layout", 7},
      {"as_device", {{"type", "cuda"}, {"index", 1}}},
      {"as_graph",
       {{"name", "subgraph_0"},
        {"graph",
         {{"inputs", json::array()},
          {"outputs", json::array()},
          {"nodes", json::array()},
          {"tensor_values", json::object()}}}}},
      {"as_custom_obj", {{"name", "obj0"}, {"class_fqn", "__torch__.Foo"}}},
      {"as_operator", "aten.add.Tensor"},
      {"as_complex", {{"real", 1.0}, {"imag", -2.0}}},
      {"as_int_lists", json::array({json::array({1, 2}), json::array()})},
      {"as_float_lists", json::array({json::array({0.5})})},
      {"as_nested_tensors", json::array({json::array({{{"name", "x"}}}),
                                         json::array({{{"name", "y"}}, {{"name", "x"}}})})},
      {"as_string_to_argument", {{"k", {{"as_int", 4}}}}},
  };
  json inputs = json::array();
  for (const auto& [key, value] : args.items()) {
    inputs.push_back({{"name", key}, {"arg", {{key, value}}}, {"kind", 2}});
  }
  json node = {{"target", "torch.ops.test.everything.default"},
               {"inputs", inputs},
               {"outputs", json::array()}};
  json tensor_meta = {{"dtype", 7},
                      {"sizes", json::array({{{"as_expr", {{"expr_str", "s0"}}}}})},
                      {"strides", json::array({{{"as_int", 1}}})},
                      {"storage_offset", {{"as_int", 0}}},
                      {"device", {{"type", "cpu"}, {"index", nullptr}}}};
  json input_specs = json::array({
      {{"user_input", {{"arg", {{"as_int", 3}}}}}},
      {{"parameter", {{"arg", {{"name", "p_w"}}}, {"parameter_name", "w"}}}},
      {{"buffer", {{"arg", {{"name", "b_b"}}}, {"buffer_name", "b"}, {"persistent", false}}}},
      {{"tensor_constant", {{"arg", {{"name", "c_c"}}}, {"tensor_constant_name", "c"}}}},
      {{"custom_obj",
        {{"arg", {{"name", "obj0"}, {"class_fqn", "__torch__.Foo"}}}, {"custom_obj_name", "o"}}}},
      {{"token", {{"arg", {{"name", "token_0"}}}}}},
      {{"constant_input", {{"name", "scale"}, {"value", {{"as_float", 0.25}}}}}},
  });
  json output_specs = json::array({
      {{"user_output", {{"arg", {{"as_none", true}}}}}},
      {{"loss_output", {{"arg", {{"name", "loss"}}}}}},
      {{"buffer_mutation", {{"arg", {{"name", "m0"}}}, {"buffer_name", "b"}}}},
      {{"gradient_to_parameter", {{"arg", {{"name", "g0"}}}, {"parameter_name", "w"}}}},
      {{"gradient_to_user_input", {{"arg", {{"name", "g1"}}}, {"user_input_name", "x"}}}},
      {{"user_input_mutation", {{"arg", {{"name", "m1"}}}, {"user_input_name", "y"}}}},
      {{"token", {{"arg", {{"name", "token_1"}}}}}},
      {{"parameter_mutation", {{"arg", {{"name", "m2"}}}, {"parameter_name", "w"}}}},
  });
  return {{"graph_module",
           {{"graph",
             {{"inputs", json::array()},
              {"outputs", json::array()},
              {"nodes", json::array({node})},
              {"tensor_values", {{"x", tensor_meta}}},
              {"sym_int_values", {{"s0", {{"as_expr", {{"expr_str", "s0"}, {"hint", nullptr}}}}}}},
              {"sym_bool_values", {{"b0", {{"as_bool", true}}}}},
              {"sym_float_values",
               {{"f0", {{"as_expr", {{"expr_str", "f0"}, {"hint", {{"as_float", 0.5}}}}}}}}}}},
            {"signature", {{"input_specs", input_specs}, {"output_specs", output_specs}}}}},
          {"range_constraints", {{"s0", {{"min_val", 2}, {"max_val", nullptr}}}}},
          {"schema_version", {{"major", 8}, {"minor", 20}}}};
}

TEST(Pt2Schema, EveryArgumentKind) {
  ExportedProgram program =
      parse_exported_program(every_argument_kind_program().dump(), "synthetic.json");
  const Node& node = program.graph.nodes.at(0);
  ASSERT_EQ(node.inputs.size(), 31u);
  std::map<std::string, const Argument*> by_key;
  for (const NamedArgument& input : node.inputs) {
    EXPECT_EQ(argument_key(input.arg.kind), input.name);
    EXPECT_EQ(input.kind, ArgumentKind::Keyword);
    by_key[input.name] = &input.arg;
  }
  EXPECT_EQ(by_key["as_tensors"]->tensors, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(by_key["as_optional_tensor"]->tensors, std::vector<std::string>{""});
  EXPECT_EQ(by_key["as_optional_tensors"]->tensors, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(by_key["as_int"]->ints[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(by_key["as_ints"]->ints[1], std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(std::isnan(by_key["as_float"]->floats[0]));
  EXPECT_EQ(by_key["as_floats"]->floats,
            (std::vector<double>{1.5, std::numeric_limits<double>::infinity(), 2.0}));
  EXPECT_EQ(by_key["as_bools"]->bools, (std::vector<bool>{true, false}));
  EXPECT_EQ(by_key["as_strings"]->strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(by_key["as_sym_int"]->syms[0].name, "sym_size_int");
  EXPECT_FALSE(by_key["as_sym_ints"]->syms[1].name.has_value());
  EXPECT_EQ(by_key["as_sym_ints"]->syms[1].int_value, 3);
  EXPECT_EQ(by_key["as_sym_float"]->syms[0].float_value, 0.5);
  EXPECT_TRUE(by_key["as_sym_bool"]->syms[0].bool_value);
  EXPECT_EQ(by_key["as_scalar_type"]->ints[0], static_cast<int64_t>(ScalarType::BFloat16));
  EXPECT_EQ(by_key["as_memory_format"]->ints[0], 2);
  EXPECT_EQ(by_key["as_device"]->device.index, 1);
  EXPECT_EQ(by_key["as_graph"]->graph->name, "subgraph_0");
  EXPECT_EQ(by_key["as_custom_obj"]->custom_obj.class_fqn, "__torch__.Foo");
  EXPECT_EQ(by_key["as_operator"]->strings[0], "aten.add.Tensor");
  EXPECT_EQ(by_key["as_complex"]->floats, (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(by_key["as_int_lists"]->int_lists, (std::vector<std::vector<int64_t>>{{1, 2}, {}}));
  EXPECT_EQ(by_key["as_float_lists"]->float_lists[0][0], 0.5);
  EXPECT_EQ(by_key["as_nested_tensors"]->nested_tensors[1], (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(by_key["as_string_to_argument"]->string_to_argument.at("k")->ints[0], 4);
}

TEST(Pt2Schema, EverySignatureKindInOrder) {
  ExportedProgram program =
      parse_exported_program(every_argument_kind_program().dump(), "synthetic.json");
  std::vector<std::string> inputs, outputs;
  for (const InputSpec& spec : program.signature.input_specs)
    inputs.push_back(input_kind_name(spec.kind));
  for (const OutputSpec& spec : program.signature.output_specs)
    outputs.push_back(output_kind_name(spec.kind));
  EXPECT_EQ(inputs,
            (std::vector<std::string>{"USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR",
                                      "CUSTOM_OBJ", "TOKEN", "CONSTANT_INPUT"}));
  EXPECT_EQ(outputs,
            (std::vector<std::string>{"USER_OUTPUT", "LOSS_OUTPUT", "BUFFER_MUTATION",
                                      "GRADIENT_TO_PARAMETER", "GRADIENT_TO_USER_INPUT",
                                      "USER_INPUT_MUTATION", "TOKEN", "PARAMETER_MUTATION"}));
  const auto& in = program.signature.input_specs;
  EXPECT_EQ(in[0].arg.ints[0], 3);
  EXPECT_EQ(in[4].arg.custom_obj.name, "obj0");
  EXPECT_EQ(in[4].target, "o");
  EXPECT_EQ(in[5].arg.tensors[0], "token_0");
  EXPECT_EQ(in[6].target, "scale");
  EXPECT_EQ(in[6].arg.floats[0], 0.25);
  const auto& out = program.signature.output_specs;
  EXPECT_TRUE(out[0].arg.is_none());
  EXPECT_EQ(out[1].arg.tensors[0], "loss");
  EXPECT_EQ(out[4].target, "x");
  EXPECT_EQ(out[7].target, "w");
}

TEST(Pt2Schema, SymbolicValuesAndRanges) {
  ExportedProgram program =
      parse_exported_program(every_argument_kind_program().dump(), "synthetic.json");
  const TensorMeta& x = program.graph.tensor_values.at("x");
  EXPECT_EQ(x.sizes[0].expr.expr_str, "s0");
  EXPECT_FALSE(x.sizes[0].expr.hint.has_value());  // hint absent
  EXPECT_EQ(x.layout, Layout::Strided);            // layout absent: the default
  EXPECT_FALSE(program.graph.sym_int_values.at("s0").expr.hint.has_value());  // hint null
  EXPECT_EQ(program.graph.sym_bool_values.at("b0").value, true);
  EXPECT_EQ(program.graph.sym_float_values.at("f0").expr.expr_str, "f0");
  EXPECT_EQ(program.range_constraints.at("s0").min_val, 2);
  EXPECT_FALSE(program.range_constraints.at("s0").max_val.has_value());
}

}  // namespace
}  // namespace luminal::pt2
