// Binds a graph's symbolic dims from the shapes of the user inputs of one call.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"
#include "ir/graph.h"

namespace luminal::ir {

// `input_shapes` holds one shape per Input node, in Graph::input_nodes() order. Each symbol is
// bound from the first Input dim that is exactly that symbol; then every input's full shape is
// checked against its symbolic shape. Throws UserError naming the input, the shape it has and
// the shape the graph expects when they disagree (wrong count, rank, size, or a symbol that no
// input dim binds).
SymbolBindings bind_symbols(const Graph& graph, const std::vector<std::vector<int64_t>>& input_shapes);

}  // namespace luminal::ir
