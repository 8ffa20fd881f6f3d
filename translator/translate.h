// Translates an exported program (PT2) into the primitive IR.
//
// Needs: a parsed Pt2Program. Guarantees: an IR graph that passes ir::verify, whose Input
// nodes are the program's tensor user inputs in call order and whose Weight nodes are named
// by the FQN of the parameter/buffer/constant they stand for; or an exception naming the node
// (UnsupportedError for an op with no translation, UserError for a malformed program).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pt2/reader.h"

namespace luminal::translator {

struct ProgramOutput {
  // WeightMutation: the new value of a bound buffer or parameter (a batch norm's running
  // statistics; an optimizer step's parameters), written into the caller's tensor.
  enum class Kind { UserOutput, WeightMutation, UserInputMutation };
  Kind kind = Kind::UserOutput;
  std::string target;        // mutated weight FQN or user input name
  int user_input_index = -1; // UserInputMutation: index into TranslatedProgram::input_names
};

struct WeightSpec {
  std::string fqn;        // bound by this name (ir::Node::name of the Weight node)
  std::string graph_name; // placeholder name in the program ("p_fc1_weight")
  bool is_mutated = false;
};

struct TranslatedProgram {
  ir::Graph graph;
  std::vector<std::string> input_names;  // tensor user inputs, in call order
  std::vector<WeightSpec> weights;
  std::vector<ProgramOutput> outputs;    // parallel to graph.outputs()
  // Overloads ("aten::foo.bar") run through the ATen fallback: those with no native translation
  // and what a native one leaves to torch (dropout's random draw); each listed once, in program
  // order.
  std::vector<std::string> aten_fallback_ops;
};

struct TranslateOptions {
  // An op with no native translation becomes AtenCall nodes (true) or an UnsupportedError.
  bool aten_fallback = false;
  // Whether torch can call an overload ("aten::foo.default"): one it cannot is an
  // UnsupportedError at translation, never a failure at the first call. Unset: not asked.
  std::function<bool(const std::string& overload)> aten_op_exists;
};

TranslatedProgram translate(const pt2::Pt2Program& program, const TranslateOptions& options = {});

}  // namespace luminal::translator
