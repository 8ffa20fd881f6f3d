// Schema defaults of the arguments torch.export may omit from a node (trailing optionals and
// keyword arguments equal to their default), keyed by overload then argument name.
#pragma once

#include <string>

#include "pt2/schema.h"

namespace luminal::translator {

// nullptr when the schema of `overload` gives `arg` no default (or the table lacks it).
const pt2::Argument* schema_default(const std::string& overload, const std::string& arg);

}  // namespace luminal::translator
