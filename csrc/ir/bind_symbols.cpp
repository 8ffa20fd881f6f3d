#include "ir/bind_symbols.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace luminal::ir {

namespace {

std::string sizes_to_string(const std::vector<int64_t>& sizes) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < sizes.size(); ++i) s << (i ? ", " : "") << sizes[i];
  s << "]";
  return s.str();
}

// "s0=3, s1=7": the values a mismatch was judged against, so the user sees which input fixed them.
std::string symbols_in(const Shape& shape, const SymbolBindings& bindings) {
  std::vector<std::string> names;
  for (const Expr& dim : shape) dim.collect_symbols(names);
  std::ostringstream s;
  std::vector<std::string> seen;
  for (const std::string& name : names) {
    auto it = bindings.find(name);
    if (it == bindings.end() || std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    s << (seen.size() > 1 ? ", " : "") << name << "=" << it->second;
  }
  return s.str();
}

std::string mismatch_message(const Node& input, const std::vector<int64_t>& actual, const SymbolBindings& bindings) {
  const std::string values = symbols_in(input.shape, bindings);
  std::ostringstream s;
  s << "input '" << input.name << "' has shape " << sizes_to_string(actual) << " but the compiled graph expects "
    << shape_to_string(input.shape) << (values.empty() ? "" : " with " + values)
    << "; pass inputs of the compiled shapes, or mark the dim dynamic when compiling";
  return s.str();
}

void check_rank(const Node& input, const std::vector<int64_t>& actual) {
  USER_CHECK(actual.size() == input.shape.size()) << mismatch_message(input, actual, {});
  for (int64_t size : actual)
    USER_CHECK(size >= 0) << "input '" << input.name << "' has a negative size in shape " << sizes_to_string(actual);
}

void bind_bare_symbols(const Node& input, const std::vector<int64_t>& actual, SymbolBindings& bindings) {
  for (size_t d = 0; d < actual.size(); ++d) {
    const Expr& dim = input.shape[d];
    if (dim.is_symbol()) bindings.emplace(dim.symbol_name(), actual[d]);  // the first binding wins
  }
}

void check_shape(const Node& input, const std::vector<int64_t>& actual, const SymbolBindings& bindings) {
  for (size_t d = 0; d < actual.size(); ++d) {
    int64_t expected = 0;
    try {
      expected = input.shape[d].evaluate(bindings);
    } catch (Error& e) {
      e.add_context("input '" + input.name + "' dim " + std::to_string(d) + " (" + input.shape[d].to_string() + ")");
      throw;
    }
    USER_CHECK(expected == actual[d]) << mismatch_message(input, actual, bindings);
  }
}

}  // namespace

SymbolBindings bind_symbols(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes) {
  return bind_symbols(graph, graph.input_nodes(), input_shapes);
}

SymbolBindings bind_symbols(const Graph& graph, const std::vector<NodeId>& inputs,
                            const std::vector<std::vector<int64_t>>& input_shapes) {
  USER_CHECK(inputs.size() == input_shapes.size())
      << "the compiled graph takes " << inputs.size() << " inputs but was called with " << input_shapes.size();
  SymbolBindings bindings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_rank(graph.node(inputs[i]), input_shapes[i]);
    bind_bare_symbols(graph.node(inputs[i]), input_shapes[i], bindings);
  }
  for (size_t i = 0; i < inputs.size(); ++i) check_shape(graph.node(inputs[i]), input_shapes[i], bindings);
  check_assertions(graph, bindings);
  return bindings;
}

void bind_data_symbol(const Graph& graph, const DataSymbol& symbol, int64_t value, SymbolBindings& bindings) {
  USER_CHECK(value >= 0 || !symbol.is_size) << "the data-dependent size " << symbol.name << " (from " << symbol.origin
                                             << ") is " << value
                         << " in this call; a size must not be negative";
  bindings[symbol.name] = value;
  check_assertions(graph, bindings, &symbol.name);
}

void check_assertions(const Graph& graph, const SymbolBindings& bindings, const std::string* only) {
  std::vector<std::string> names;
  for (const SymbolAssertion& a : graph.assertions()) {
    names.clear();
    a.holds.collect_symbols(names);
    if (only && std::find(names.begin(), names.end(), *only) == names.end()) continue;
    const bool bound = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return bindings.count(n); });
    if (!bound) continue;
    USER_CHECK(a.holds.evaluate(bindings) != 0) << a.message << " (" << symbols_in({a.holds}, bindings) << ")";
  }
}

std::optional<std::vector<int64_t>> evaluate_shape_if_bound(const Shape& shape, const SymbolBindings& bindings) {
  std::vector<std::string> names;
  for (const Expr& d : shape) d.collect_symbols(names);
  for (const std::string& n : names)
    if (!bindings.count(n)) return std::nullopt;
  return evaluate_shape(shape, bindings);
}

}  // namespace luminal::ir
