#include "translator/context.h"

#include <algorithm>

#include "common/error.h"
#include "translator/tensor_ops.h"

namespace luminal::translator {

Tensor TranslationContext::add(ir::Node node) {
  if (node.op == ir::Op::Input) {
    std::vector<std::string> names;
    for (const ir::Expr& d : node.shape) d.collect_symbols(names);
    input_symbols_.insert(names.begin(), names.end());
  }
  if (!data_values_.empty()) {
    std::vector<std::string> names;
    ir::collect_symbols(node, names);
    require_data_symbols(names, true);
  }
  node.origin = origin_;
  ir::View view = ir::View::contiguous(node.shape);
  ir::DType dtype = node.dtype;
  ir::NodeId id = graph_.add(std::move(node));
  return Tensor{ir::TensorRef{id, std::move(view)}, dtype};
}

const Tensor& TranslationContext::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  USER_CHECK(it != tensors_.end()) << "tensor '" << name << "' is used before any node defines it";
  return it->second;
}

void TranslationContext::require_data_symbols(const ir::View& view) {
  if (data_values_.empty()) return;
  std::vector<std::string> names;
  view.collect_symbols(names);
  require_data_symbols(names, true);
}

void TranslationContext::require_data_symbols(const ir::Expr& e) {
  if (data_values_.empty()) return;
  std::vector<std::string> names;
  e.collect_symbols(names);
  require_data_symbols(names, false);
}

void TranslationContext::require_data_symbols(const std::vector<std::string>& names, bool as_size) {
  for (const std::string& name : names) {
    auto value = data_values_.find(name);
    if (value == data_values_.end()) continue;
    auto known = data_symbols_.find(name);
    if (known != data_symbols_.end()) {
      known->second.is_size = known->second.is_size || as_size;
      continue;
    }
    const DataValue read = value->second;  // a copy: cast() below adds a node, which comes back here
    const ir::TensorRef i64 = cast(*this, read.value, ir::DType::I64).ref;
    data_symbols_.emplace(name, ir::DataSymbol{name, i64, read.origin, as_size});
  }
}

ir::Graph TranslationContext::take_graph() {
  for (auto& [name, symbol] : data_symbols_) graph_.add_data_symbol(std::move(symbol));
  data_symbols_.clear();
  return std::move(graph_);
}

const Tensor* TranslationContext::data_value(const std::string& symbol) const {
  auto it = data_values_.find(symbol);
  return it == data_values_.end() ? nullptr : &it->second.value;
}

const Tensor* TranslationContext::float_value(const std::string& name) const {
  auto it = float_values_.find(name);
  return it == float_values_.end() ? nullptr : &it->second;
}

ir::Expr TranslationContext::sym_bool(const std::string& name) const {
  auto it = sym_bools_.find(name);
  USER_CHECK(it != sym_bools_.end()) << "symbolic bool '" << name << "' is used before any node defines it";
  return it->second;
}

void TranslationContext::mutate_input(const std::string& name, Tensor value) {
  const auto& inputs = program_.signature.input_specs;
  const bool is_input = std::any_of(inputs.begin(), inputs.end(), [&](const pt2::InputSpec& spec) {
    return spec.arg.kind == pt2::Argument::Kind::Tensor && spec.arg.tensors.at(0) == name;
  });
  UNSUPPORTED_CHECK(is_input) << "the op updates '" << name << "' in place, which is not a graph input; luminal "
                              << "translates in-place updates of inputs and buffers only (functionalise the program)";
  bind_tensor(name, value);
  input_mutations_[name] = std::move(value);
}

ir::Expr TranslationContext::sym_int(const std::string& name) const {
  auto it = sym_ints_.find(name);
  USER_CHECK(it != sym_ints_.end()) << "symbolic int '" << name << "' is used before any node defines it";
  return it->second;
}

void TranslationContext::record_aten_call(const std::string& overload) {
  if (std::find(aten_calls_.begin(), aten_calls_.end(), overload) == aten_calls_.end()) aten_calls_.push_back(overload);
}

}  // namespace luminal::translator
