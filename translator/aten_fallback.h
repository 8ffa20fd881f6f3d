// Translation of an op with no native translation into AtenCall nodes (the ATen fallback).
//
// Needs: the node's op registered with the c10 dispatcher when the program runs (every aten op
// is; a custom op must be loaded in the process). Guarantees: one AtenCall node per tensor
// result, with the program's dtype and (possibly symbolic) shape, bound to the result's name;
// or UnsupportedError naming the node when the call cannot be expressed: an argument kind the
// dispatcher call cannot carry, a non-tensor result, a result shape that depends on the data.
#pragma once

#include <string>
#include <vector>

#include "ir/aten_call.h"
#include "pt2/schema.h"
#include "translator/context.h"

namespace luminal::translator {

// `overload` is the registry key, "aten::convolution.default".
void translate_aten_fallback(TranslationContext& cx, const pt2::Node& node, const std::string& overload);

// One AtenCall node for what a native translation leaves to torch's own kernel (dropout's random
// draw, so that torch.manual_seed governs it): result `output_index` of `overload` on `args`,
// whose tensor arguments index `inputs`, with the given dtype and shape. Listed among the ATen
// fallback's ops; UnsupportedError naming `why` when options={'fallback': 'error'} forbids it.
Tensor call_aten(TranslationContext& cx, const std::string& overload, std::vector<ir::AtenArg> args,
                 const std::vector<Tensor>& inputs, ir::DType dtype, const ir::Shape& shape, const std::string& why);

}  // namespace luminal::translator
