// f16/bf16 Matmul -> Cast to f32, an f32 Matmul, Cast back: torch's CPU matmul accumulates half
// types in float and rounds once, and the f32 GEMM paths (BLAS, generated GEMV) are the fast
// ones. The casts are ordinary elementwise nodes that fusion folds into their neighbours.
// Needs: a verified graph. Guarantees: every Matmul is f32, f64, an integer type or bool.
#pragma once

#include "ir/graph.h"

namespace luminal::passes {

ir::Graph legalize_matmul(ir::Graph graph);

}  // namespace luminal::passes
