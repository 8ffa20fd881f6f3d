// Weight-only quantized Linears at decode time: torchao's int8 weights reach the IR as a Cast of
// the int8 weight to the activations' dtype, read by a GEMV. Casting makes a float copy of the
// whole weight on every call (4 bytes written and read again per weight byte); the GEMV
// pattern kernel instead reads the int8 weight itself and widens it in registers. This pass
// points such a GEMV's weight operand past the Cast (the scales stay where torchao put them,
// a multiply of the GEMV's output, which fuses into its consumer).
//
// Needs: a verified graph. Guarantees: the same values (an int8 value is exact in f32 and bf16);
// a Matmul whose weight operand is i8 only where is_gemv holds, its dtype f32 or bf16; a Cast
// nothing reads any more is left for dead-code elimination.
#pragma once

#include "ir/graph.h"

namespace luminal::passes {

ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph);

}  // namespace luminal::passes
