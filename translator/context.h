// State shared by the op handlers while one program is translated: the IR graph under
// construction and the table from program value names to IR tensors and symbolic ints.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pt2/schema.h"

namespace luminal::translator {

// A program tensor during translation: an IR node's output read through a view.
struct Tensor {
  ir::TensorRef ref;
  ir::DType dtype = ir::DType::F32;
  const ir::Shape& shape() const { return ref.view.shape(); }
  int rank() const { return static_cast<int>(ref.view.rank()); }
};

class TranslationContext {
 public:
  explicit TranslationContext(const pt2::ExportedProgram& program) : program_(program) {}

  ir::Graph& graph() { return graph_; }
  const pt2::ExportedProgram& program() const { return program_; }

  // The aten node being translated, stamped on every IR node as its origin.
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }
  // Adds a node whose output is read contiguously; returns it as a Tensor.
  Tensor add(ir::Node node);

  const Tensor& tensor(const std::string& name) const;  // UserError for an unknown name
  bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
  void bind_tensor(const std::string& name, Tensor tensor) { tensors_[name] = std::move(tensor); }

  // An op that updates its argument in place (a training batch norm's running statistics, in an
  // archive written without functionalisation): the program value `name` is `value` from now on,
  // and, when `name` is a graph input, its caller's tensor receives `value` after the run.
  void mutate_input(const std::string& name, Tensor value);
  // The graph inputs updated in place so far and their final values, by program value name.
  const std::map<std::string, Tensor>& input_mutations() const { return input_mutations_; }

  ir::Expr sym_int(const std::string& name) const;  // UserError for an unknown name
  void bind_sym_int(const std::string& name, ir::Expr value) { sym_ints_[name] = std::move(value); }

  // Symbolic numbers computed from tensor data (`.item()`, nonzero's row count). An integer one
  // is a symbol ("u0") whose value a one-element tensor holds: used as a number it reads that
  // tensor; once a node or graph output's sizes mention it, it becomes a data symbol of the
  // graph (ir::DataSymbol), bound by the runtime when the tensor is computed. A float one is
  // known by its program name only (a SymFloat is never a size).
  // A symbol name of luminal's own ("lm_nz0"): torch names its symbols s0, u0, zuf0, ...
  std::string fresh_symbol(const std::string& stem) { return "lm_" + stem + std::to_string(fresh_symbols_++); }
  // Whether `symbol` has a value: a dim of an input, or a data value.
  bool knows_symbol(const std::string& symbol) const {
    return input_symbols_.count(symbol) != 0 || data_values_.count(symbol) != 0;
  }
  void bind_data_value(const std::string& symbol, Tensor value) {
    data_values_[symbol] = DataValue{std::move(value), origin_};
  }
  const Tensor* data_value(const std::string& symbol) const;
  void bind_float_value(const std::string& name, Tensor value) { float_values_[name] = std::move(value); }
  const Tensor* float_value(const std::string& name) const;
  // Makes the data values `view` mentions data symbols of the graph (a graph output's view).
  void require_data_symbols(const ir::View& view);
  // Makes the data values `e` mentions data symbols that need not be sizes (an assertion's).
  void require_data_symbols(const ir::Expr& e);

  // Symbolic bools (the comparisons torch.export asserts on), as expressions that are 1 when
  // true and 0 when false.
  void bind_sym_bool(const std::string& name, ir::Expr value) { sym_bools_[name] = std::move(value); }
  ir::Expr sym_bool(const std::string& name) const;  // UserError for an unknown name

  // Calls into torch's own kernels (AtenCall nodes): the ops with no native translation, and
  // what a native translation leaves to torch (dropout's random draw). Whether they are allowed
  // (options={'fallback': ...}), and each overload called, once, in program order.
  void allow_aten_calls(bool allowed) { aten_calls_allowed_ = allowed; }
  bool aten_calls_allowed() const { return aten_calls_allowed_; }
  void record_aten_call(const std::string& overload);
  const std::vector<std::string>& aten_calls() const { return aten_calls_; }

  // The graph, with the data symbols required of it.
  ir::Graph take_graph();

 private:
  const pt2::ExportedProgram& program_;
  ir::Graph graph_;
  std::string origin_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, ir::Expr> sym_ints_;
  std::map<std::string, ir::Expr> sym_bools_;
  struct DataValue {
    Tensor value;
    std::string origin;  // the aten node that computed it, for messages
  };
  std::map<std::string, DataValue> data_values_;
  std::map<std::string, ir::DataSymbol> data_symbols_;  // required so far, by name
  std::set<std::string> input_symbols_;                 // the symbols of Input nodes' shapes
  std::map<std::string, Tensor> input_mutations_;
  int fresh_symbols_ = 0;
  std::map<std::string, Tensor> float_values_;
  bool aten_calls_allowed_ = false;
  std::vector<std::string> aten_calls_;

  void require_data_symbols(const std::vector<std::string>& names, bool as_size);
};

}  // namespace luminal::translator
