// The most rows (a prompt's) of each kind of Matmul that a runtime's GEMV pattern kernel computes
// with the weight read in place, rather than through a GEMM (or a widened copy of the weight).
// Every limit is 1 unless the runtime sets it: one row is always a GEMV where the predicates of
// passes/legalize_matmul.h take the Matmul at all. The cpu runtime sets them from its ISA
// (runtime/cpu/build_program.cpp); the values are codegen/kernel.h's measured thresholds.
#pragma once

#include <algorithm>
#include <cstdint>

namespace luminal::passes {

struct GemvRows {
  // f16/bf16 Matmuls computed a row at a time in their dtype (passes::is_gemv).
  int64_t half = 1;
  // f32 Matmuls of an f32 weight: a few rows at once in registers, instead of sgemm's packed copy
  // of the weight; f32_rows says how many at a depth.
  int64_t f32 = 1;
  // ...and at most this many values of `a` (rows x K: the strips the kernel packs it into), where
  // set (0: no bound).
  int64_t f32_values = 0;
  // f32 Matmuls of an int8 or group-quantized weight (passes/quantized_weights.h,
  // passes/group_quantized_gemv.h): each block of weight rows widened once for all the rows.
  int64_t quantized_f32 = 1;
  // bf16 Matmuls reading an int8 or group-quantized weight: each chunk of the weight dequantized
  // once for all the rows.
  int64_t quantized_bf16 = 1;
  // bf16 Matmuls of a bf16 weight multiplied as bf16 pairs (passes::is_bf16_pair_gemv), ahead of
  // `half` and of a native bf16 GEMM.
  int64_t bf16_pairs = 1;
  // The same through a [K, N] weight, GPT-2's Conv1D (passes::is_column_gemv).
  int64_t bf16_pair_columns = 1;
  // f32 Matmuls of more than one row through a [K, N] weight (passes::is_column_gemv).
  int64_t f32_columns = 1;

  // The most rows of an f32 Matmul of an f32 weight and depth K (0: not a constant) the GEMV
  // takes: `f32`, fewer where f32_values bounds rows x K (none for an unknown K).
  int64_t f32_rows(int64_t depth) const {
    if (f32_values == 0) return f32;
    if (depth <= 0) return 1;
    return std::max<int64_t>(1, std::min(f32, f32_values / depth));
  }
};

}  // namespace luminal::passes
