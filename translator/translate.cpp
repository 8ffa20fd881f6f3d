#include "translator/translate.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "translator/aten_fallback.h"
#include "translator/registry.h"
#include "translator/sym_expr.h"

namespace luminal::translator {
namespace {

const pt2::TensorMeta& meta_of(const pt2::ExportedProgram& program, const std::string& name) {
  auto it = program.graph.tensor_values.find(name);
  USER_CHECK(it != program.graph.tensor_values.end()) << "graph input '" << name << "' has no tensor_values entry";
  return it->second;
}

// Input nodes for tensor user inputs, Weight nodes (named by FQN) for parameters, buffers and
// constants, in signature order.
void bind_inputs(TranslationContext& cx, TranslatedProgram& out) {
  const pt2::ExportedProgram& program = cx.program();
  for (const pt2::InputSpec& spec : program.signature.input_specs) {
    using Kind = pt2::InputSpec::Kind;
    if (spec.kind == Kind::UserInput || spec.kind == Kind::ConstantInput) {
      // SymInt inputs are bound from sym_int_values; other constants were specialised by export.
      if (spec.arg.kind != pt2::Argument::Kind::Tensor) continue;
      const std::string& name = spec.arg.tensors.at(0);
      const pt2::TensorMeta& meta = meta_of(program, name);
      ir::Node n;
      n.op = ir::Op::Input;
      n.name = name;
      n.dtype = to_ir_dtype(meta.dtype, "input '" + name + "'");
      n.shape = to_ir_shape(meta.sizes);
      cx.set_origin("input " + name);
      cx.bind_tensor(name, cx.add(std::move(n)));
      out.input_names.push_back(name);
      continue;
    }
    UNSUPPORTED_CHECK(spec.kind == Kind::Parameter || spec.kind == Kind::Buffer || spec.kind == Kind::TensorConstant)
        << "graph input '" << (spec.arg.tensors.empty() ? spec.target : spec.arg.tensors[0])
        << "' is a custom object or token input; not supported";
    const std::string& name = spec.arg.tensors.at(0);
    const pt2::TensorMeta& meta = meta_of(program, name);
    ir::Node n;
    n.op = ir::Op::Weight;
    n.name = spec.target;
    n.dtype = to_ir_dtype(meta.dtype, "weight '" + spec.target + "'");
    n.shape = to_ir_shape(meta.sizes);
    cx.set_origin("weight " + spec.target);
    cx.bind_tensor(name, cx.add(std::move(n)));
    out.weights.push_back(WeightSpec{spec.target, name, false});
  }
}

// ", at model.py:17: x = foo(x)" from the innermost frame of the node's stack trace.
std::string source_hint(const pt2::Node& node) {
  auto it = node.metadata.find("stack_trace");
  if (it == node.metadata.end()) return "";
  std::istringstream lines(it->second);
  std::string line, frame, code;
  while (std::getline(lines, line)) {
    const size_t file = line.find("File \"");
    if (file == std::string::npos) continue;
    frame = line.substr(file);
    code.clear();
    if (std::getline(lines, code)) code.erase(0, code.find_first_not_of(" \t"));
  }
  if (frame.empty()) return "";
  return ", at " + frame + (code.empty() ? "" : ": " + code);
}

void translate_node(TranslationContext& cx, const pt2::Node& node, const TranslateOptions& options) {
  const std::string key = overload_key(node.target);
  OpHandler handler = find_handler(key);
  UNSUPPORTED_CHECK(handler != nullptr || cx.aten_calls_allowed())
      << key << " has no native translation (node '" << node.name << "'" << source_hint(node)
      << ") and options={'fallback': 'error'} forbids running it through the ATen fallback; use "
      << "fallback='aten' or file an issue asking for a native translation";
  const std::string frame = "node '" + node.name + "' (" + key + ")";
  cx.set_origin(key + " " + node.name);
  try {
    NodeArgs args(cx, node, key);
    if (handler == nullptr) {
      // Symbolic-int arithmetic is always translated natively; only kernels fall back.
      UNSUPPORTED_CHECK(key.rfind("_operator::", 0) != 0) << key << " has no translation";
      // A collective completes after its call returns (wait_tensor), but the fallback copies its
      // result at once: it would read what the collective has not written yet, silently.
      UNSUPPORTED_CHECK(key.rfind("_c10d_functional::", 0) != 0 && key.rfind("c10d::", 0) != 0)
          << key << " is a collective luminal does not run yet (docs/distributed.md lists those it does); "
          << "the ATen fallback cannot run it, as its result is complete only after the call";
      // A higher-order op has no schema (its operands are positional, some are graphs or ops), so
      // the fallback, which calls an operator by its schema, cannot run one.
      UNSUPPORTED_CHECK(key.rfind("higher_order::", 0) != 0)
          << key << " is a higher-order op luminal does not translate, and the ATen fallback runs only "
          << "operators with a schema; file an issue with the model that produced it";
      UNSUPPORTED_CHECK(!options.aten_op_exists || options.aten_op_exists(key))
          << key << " has no native translation, and torch's dispatcher in this process has no operator of that "
          << "name to run it with (a custom op whose library is not loaded? load it before compiling)";
      translate_aten_fallback(cx, node, key);
    } else {
      handler(args);
    }
    // torch.export lists exactly the op's outputs, and every handler binds all of them, so an
    // unbound tensor output means the archive lists one the op does not have (as the archive's
    // metadata mismatches in args.cpp, most likely edited; found by fuzz_compile).
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string name = args.output_name(i);
      USER_CHECK(node.outputs[i].kind != pt2::Argument::Kind::Tensor || cx.has_tensor(name))
          << "the program lists output " << i << " ('" << name << "') of " << node.outputs.size() << ", but " << key
          << " computes no such tensor; the archive's node disagrees with its op (edited or damaged?): re-export "
          << "it. If torch.export wrote it unchanged, please report this as a luminal bug";
    }
  } catch (Error& e) {
    e.add_context(frame);
    throw;
  } catch (const std::exception& e) {
    throw InternalError(frame + ": " + e.what());
  }
}

// A graph output must have the dtype and static sizes the program declares.
void check_output(const TranslationContext& cx, const std::string& name, const Tensor& t) {
  auto it = cx.program().graph.tensor_values.find(name);
  if (it == cx.program().graph.tensor_values.end()) return;
  const ir::DType dtype = to_ir_dtype(it->second.dtype, "output '" + name + "'");
  const ir::Shape shape = to_ir_shape(it->second.sizes);
  bool same = dtype == t.dtype && shape.size() == t.shape().size();
  for (size_t d = 0; same && d < shape.size(); ++d)
    same = !(shape[d].is_constant() && t.shape()[d].is_constant()) || shape[d] == t.shape()[d];
  INTERNAL_CHECK(same) << "graph output '" << name << "' translated as " << ir::dtype_name(t.dtype) << " "
                       << shape_to_string(t.shape()) << ", the program says " << ir::dtype_name(dtype) << " "
                       << shape_to_string(shape);
}

void bind_outputs(TranslationContext& cx, TranslatedProgram& out) {
  for (const pt2::OutputSpec& spec : cx.program().signature.output_specs) {
    using Kind = pt2::OutputSpec::Kind;
    ProgramOutput po;
    switch (spec.kind) {
      case Kind::UserOutput: po.kind = ProgramOutput::Kind::UserOutput; break;
      case Kind::BufferMutation:
      case Kind::ParameterMutation: po.kind = ProgramOutput::Kind::WeightMutation; break;
      case Kind::UserInputMutation: po.kind = ProgramOutput::Kind::UserInputMutation; break;
      default: UNSUPPORTED_ERROR() << "graph output of kind " << static_cast<int>(spec.kind)
                                   << " (loss, gradient or token) is not supported";
    }
    UNSUPPORTED_CHECK(spec.arg.kind == pt2::Argument::Kind::Tensor)
        << "graph output " << out.outputs.size() << " is " << pt2::argument_key(spec.arg.kind)
        << "; only tensor outputs are supported";
    const std::string& name = spec.arg.tensors.at(0);
    po.target = spec.target;
    if (po.kind == ProgramOutput::Kind::WeightMutation) {
      bool found = false;
      for (WeightSpec& w : out.weights)
        if (w.fqn == spec.target) found = w.is_mutated = true;
      USER_CHECK(found) << "graph output '" << name << "' mutates unknown parameter or buffer '" << spec.target << "'";
    }
    if (po.kind == ProgramOutput::Kind::UserInputMutation) {
      for (size_t i = 0; i < out.input_names.size(); ++i)
        if (out.input_names[i] == spec.target) po.user_input_index = static_cast<int>(i);
      USER_CHECK(po.user_input_index >= 0) << "graph output '" << name << "' mutates unknown user input '"
                                           << spec.target << "'";
    }
    const Tensor& t = cx.tensor(name);
    check_output(cx, name, t);
    cx.require_data_symbols(t.ref.view);
    cx.graph().outputs().push_back(t.ref);
    out.outputs.push_back(po);
  }
}

// Graph inputs an op updated in place: their final values are extra outputs, written into the
// caller's buffers like the mutations export lists (ProgramOutput kinds).
void bind_input_mutations(TranslationContext& cx, TranslatedProgram& out) {
  for (const auto& mutation : cx.input_mutations()) {
    // Not a structured binding: lambdas cannot capture those before C++20 (clang 14 builds the fuzzers).
    const std::string& name = mutation.first;
    const Tensor& value = mutation.second;
    const auto& specs = cx.program().signature.input_specs;
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const pt2::InputSpec& s) {
      return s.arg.kind == pt2::Argument::Kind::Tensor && s.arg.tensors.at(0) == name;
    });
    INTERNAL_CHECK(spec != specs.end()) << "'" << name << "' was mutated but is no graph input";
    ProgramOutput po;
    po.target = spec->target;
    if (spec->kind == pt2::InputSpec::Kind::Buffer || spec->kind == pt2::InputSpec::Kind::Parameter) {
      po.kind = ProgramOutput::Kind::WeightMutation;
      for (WeightSpec& w : out.weights)
        if (w.fqn == spec->target) w.is_mutated = true;
    } else {
      UNSUPPORTED_CHECK(spec->kind == pt2::InputSpec::Kind::UserInput)
          << "the program updates '" << name << "' in place, a constant; only parameters, buffers and user inputs "
          << "can be updated";
      po.kind = ProgramOutput::Kind::UserInputMutation;
      po.target = name;
      po.user_input_index = static_cast<int>(
          std::find(out.input_names.begin(), out.input_names.end(), name) - out.input_names.begin());
    }
    cx.graph().outputs().push_back(value.ref);
    out.outputs.push_back(po);
  }
}

}  // namespace

TranslatedProgram translate(const pt2::Pt2Program& archive, const TranslateOptions& options) {
  const pt2::ExportedProgram& program = archive.program;
  TranslationContext cx(program);
  TranslatedProgram out;
  for (const auto& [name, value] : program.graph.sym_int_values) {
    try {
      cx.bind_sym_int(name, to_ir_expr(value));
    } catch (Error& e) {
      e.add_context("sym_int_values['" + name + "']");
      throw;
    }
  }
  cx.allow_aten_calls(options.aten_fallback);
  bind_inputs(cx, out);
  for (const pt2::Node& node : program.graph.nodes) translate_node(cx, node, options);
  bind_outputs(cx, out);
  bind_input_mutations(cx, out);
  out.aten_fallback_ops = cx.aten_calls();
  out.graph = cx.take_graph();
  ir::verify(out.graph);
  return out;
}

}  // namespace luminal::translator
