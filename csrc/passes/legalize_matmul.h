// f16/bf16 Matmul -> Cast to f32, an f32 Matmul, Cast back: torch's CPU matmul accumulates half
// types in float and rounds once, and BLAS is f32. The casts are ordinary elementwise nodes that
// fusion folds into their neighbours. GEMVs stay in their dtype: the GEMV pattern kernel
// widens in registers, where a Cast node would copy the whole weight on every decode step. So
// do the dtypes in `native_half` (a runtime with a GEMM for them, which also rounds once).
// Needs: a verified graph. Guarantees: every Matmul is f32, f64, an integer type, bool, of a
// dtype in `native_half`, or an f16/bf16 one for which is_gemv or is_column_gemv holds with
// `rows`.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "passes/gemv_rows.h"

namespace luminal::passes {

// A Matmul of `graph` the GEMV pattern kernel computes (codegen/kernel.h GemvSpec): f32, f16 or
// bf16 with M = 1, f16/bf16 with a constant M <= rows.half, f32 with a constant M <=
// rows.f32_rows(K) (<= rows.quantized_f32 reading an int8 weight), a rank-2 bf16 one reading an
// int8 weight (passes/quantized_weights.h) with a constant M <= rows.quantized_bf16, a rank-2
// bf16 one reading a bf16 weight with a constant M <= rows.bf16_pairs (is_bf16_pair_gemv), or
// i32 reading two int8 operands with any M (a GEMV per row), and both operands read K with unit
// stride (a Linear's weight is [N, K] row-major).
bool is_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows = {});

// A rank-2 bf16 Matmul of a bf16 weight with a constant M in (1, bf16_pair_rows]: a prompt's
// Linear that the GEMV kernel multiplies as bf16 pairs (GemvSpec::bf16_pairs, vdpbf16ps), where
// the runtime's CPU has AVX512-BF16 (GemvRows::bf16_pairs).
bool is_bf16_pair_gemv(const ir::Graph& graph, const ir::Node& matmul, int64_t bf16_pair_rows);

// An f32 Matmul with a symbolic M (a dynamic-shape prefill) that is_gemv would take for a
// constant M of at most GemvRows::f32_rows, or a bf16 one that is_bf16_pair_gemv would take for a
// constant M where the CPU multiplies bf16 pairs (bf16_pair_rows > 1): the cpu runtime runs it as
// the GEMV kernel when a call's M is that small, and through BLAS (f32) or ATen (bf16) otherwise.
bool is_gemv_for_few_rows(const ir::Graph& graph, const ir::Node& matmul, int64_t bf16_pair_rows = 1);

// An f32 GroupedMatmul (MoE experts) whose operands both read K with unit stride (each expert's
// weight is [N, K] row-major), or such a bf16 one where the CPU multiplies bf16 pairs
// (bf16_pair_rows > 1): the cpu runtime runs each expert's rows as the GEMV kernel
// (codegen::lower_expert_gemv) when they are few, as is_gemv_for_few_rows does for a Matmul.
bool is_expert_gemv(const ir::Graph& graph, const ir::Node& grouped_matmul, int64_t bf16_pair_rows = 1);

// A Matmul whose weight b is [K, N] with N contiguous (x @ W, GPT-2's Conv1D): an f16/bf16 one
// with M = 1, or a rank-2 one whose `a` reads K with unit stride with a constant M <=
// rows.bf16_pair_columns (bf16, a prompt's rows multiplied as bf16 pairs where the CPU has
// AVX512-BF16) or 1 < M <= rows.f32_columns (f32): the GEMV pattern kernel's column form
// (codegen/kernel.h GemvSpec::columns, with rows_in_item for M > 1).
bool is_column_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows = {});

// A Matmul the GEMV pattern kernel computes in either form: is_gemv or is_column_gemv with `rows`.
bool is_any_gemv(const ir::Graph& graph, const ir::Node& matmul, const GemvRows& rows);

ir::Graph legalize_matmul(ir::Graph graph, const std::vector<ir::DType>& native_half, const GemvRows& rows);

}  // namespace luminal::passes
