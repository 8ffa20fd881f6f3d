// An aten op the IR does not compose, run by the runtime through the ATen fallback: the op's
// name and its arguments as the program gave them, with tensors referring to the node's inputs.
//
// The core stays free of torch: this is plain data. The runtime hands it to the executor that
// luminal._C registers (runtime/aten_fallback.h), which calls the op through the c10
// dispatcher on the input buffers and writes output `output_index` into the node's buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/expr.h"

namespace luminal::ir {

// One argument of the call. Ints are expressions because a size may be symbolic (torch.rand
// with a SymInt size): the runtime evaluates them with the call's symbol bindings.
struct AtenArg {
  enum class Kind {
    None,
    Tensor,           // tensors[0] indexes Node::inputs
    Tensors,          // Tensor[]
    OptionalTensors,  // Tensor?[]; -1 for None
    Int,              // ints[0]
    Ints,
    Float,  // floats[0]
    Floats,
    Bool,  // bools[0]
    Bools,
    String,        // text
    ScalarType,    // dtype
    Layout,        // strided only: other layouts never reach a compiled graph
    MemoryFormat,  // memory_format
    Device,        // text: "cpu", "cuda:0"
  };
  enum class MemoryFormat { Contiguous, ChannelsLast, ChannelsLast3d, Preserve };

  std::string name;  // the schema argument's name
  Kind kind = Kind::None;
  std::vector<int> tensors;
  std::vector<Expr> ints;
  std::vector<double> floats;
  std::vector<bool> bools;
  std::string text;
  DType dtype = DType::F32;
  MemoryFormat memory_format = MemoryFormat::Contiguous;
};

struct AtenCall {
  std::string op;        // "aten::convolution"
  std::string overload;  // "default" (the dispatcher's empty overload name)
  std::vector<AtenArg> args;
  // Which tensor of the op's results this node is, counting a returned Tensor[] element by
  // element. An op with several used results becomes one node per result, each calling the op:
  // correct for deterministic ops, and random ops return one tensor.
  int output_index = 0;

  std::string full_name() const { return op + "." + overload; }
};

}  // namespace luminal::ir
