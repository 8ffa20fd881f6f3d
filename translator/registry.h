// The one greppable table from full overload names ("aten::add.Tensor") to handlers.
// Handlers live in the family files (elementwise.cpp, reduction.cpp, movement.cpp,
// indexing.cpp, linalg.cpp, nn.cpp, creation.cpp, meta.cpp).
#pragma once

#include <string>
#include <vector>

#include "translator/args.h"

namespace luminal::translator {

using OpHandler = void (*)(NodeArgs& args);

// nullptr when the overload has no translation.
OpHandler find_handler(const std::string& overload);
std::vector<std::string> registered_overloads();

// "torch.ops.aten.add.Tensor" -> "aten::add.Tensor"; "_operator.mul" -> "_operator::mul".
std::string overload_key(const std::string& target);

}  // namespace luminal::translator
