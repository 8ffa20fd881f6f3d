// Per-channel int8 Linears at decode time: torchao's int8 weights reach the IR as a Cast of the
// int8 weight to the activations' dtype, read by a GEMV; with dynamic int8 activations
// (aten::_int_mm) both operands are int8 widened to i32. Casting makes a copy of the whole
// weight on every call (4 bytes written and read again per weight byte); the GEMV pattern
// kernel instead reads the int8 operands themselves and widens them in registers. This pass
// points such a GEMV's operands past the Casts (the scales stay where torchao put them, a
// multiply of the GEMV's output, which fuses into its consumer). An f32 prompt of at most
// rows.quantized_f32 rows is such a GEMV too (the kernel widens each block of weight rows once
// for all of the prompt's rows); a longer one, or a bf16 one, keeps its Cast, made to widen the
// weight in its own layout (see quantized_weights.cpp); a bf16 prompt of at most
// rows.quantized_bf16 rows is such a GEMV as well.
//
// Needs: a verified graph. Guarantees: the same values (an int8 value is exact in f32, bf16 and
// i32); a Matmul reads an i8 operand only where is_gemv(graph, matmul, rows) holds: an
// f32 or bf16 one its weight, an i32 one both operands; a Cast nothing reads any more is left
// for dead-code elimination.
//
// On a CPU with AVX512-VNNI and no AMX, torchao makes the activations unsigned before _int_mm,
// (x + 128) as uint8, and subtracts 128 times the weight's column sums after: a second pass over
// the whole weight on every call. fold_unsigned_activation_offset (run first) turns that Sub back
// into the product of x itself, exactly: (x + 128) w - 128 sum w = x w, mod 2^32 as torch's i32
// sums wrap. The column sums, nothing reading them any more, are left for dead-code elimination.
#pragma once

#include "ir/graph.h"
#include "passes/gemv_rows.h"

namespace luminal::passes {

ir::Graph fold_unsigned_activation_offset(ir::Graph graph);
ir::Graph read_quantized_weights_in_gemvs(ir::Graph graph, const GemvRows& rows);

}  // namespace luminal::passes
