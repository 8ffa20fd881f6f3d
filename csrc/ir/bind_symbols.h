// Binds a graph's symbolic dims from the shapes of the user inputs of one call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/graph.h"

namespace luminal::ir {

// `input_shapes` holds one shape per Input node, in Graph::input_nodes() order. Each symbol is
// bound from the first Input dim that is exactly that symbol; then every input's full shape is
// checked against its symbolic shape. Throws UserError naming the input, the shape it has and
// the shape the graph expects when they disagree (wrong count, rank, size, or a symbol that no
// input dim binds).
// Ends by checking the graph's assertions on the symbols bound (check_assertions).
SymbolBindings bind_symbols(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes);
// The same with the graph's Input nodes found beforehand (Graph::input_nodes() walks every node:
// a runtime binding each call's inputs keeps them).
SymbolBindings bind_symbols(const Graph& graph, const std::vector<NodeId>& inputs,
                            const std::vector<std::vector<int64_t>>& input_shapes);

// Binds a data symbol to `value`, the element the runtime read from symbol.value once its
// producer ran, then checks the assertions that mention it. Throws UserError naming the symbol
// and the aten node it comes from when the value is negative and the symbol is a size.
void bind_data_symbol(const Graph& graph, const DataSymbol& symbol, int64_t value, SymbolBindings& bindings);

// Checks every assertion of the graph whose symbols are all bound (those that mention `only`,
// when given); UserError with the assertion's message for one that fails.
void check_assertions(const Graph& graph, const SymbolBindings& bindings, const std::string* only = nullptr);

// The shape's values, or nullopt when it mentions a symbol not bound yet (a data symbol before
// its producer has run).
std::optional<std::vector<int64_t>> evaluate_shape_if_bound(const Shape& shape, const SymbolBindings& bindings);

}  // namespace luminal::ir
