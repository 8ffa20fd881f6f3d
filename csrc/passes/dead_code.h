// Removes compute nodes nothing reads (Input and Weight nodes stay: inputs are positional and
// weights are bound by name; a data symbol's value is read by the runtime).
// Needs: a verified graph. Guarantees: the same outputs, every remaining node live.
#pragma once

#include "ir/graph.h"

namespace luminal::passes {

ir::Graph eliminate_dead_code(ir::Graph graph);

}  // namespace luminal::passes
