// What every pass may read besides the graph: where to dump IR, and the fusion log. Passed
// explicitly (no ambient state).
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"

namespace luminal::passes {

struct PassContext {
  std::string debug_dir;              // when set, the IR after each pass is written here
  std::vector<std::string> log;       // accept/reject decisions, one line each
  int fusion_rounds = 16;             // bound on the fusion fixpoint
  size_t max_group_nodes = 96;        // a fused kernel never grows beyond this many nodes
  // Group scaled dot-product attention into one pattern kernel (a runtime that has one).
  bool attention_kernels = false;
  // Its attention kernel reads f16/bf16 q, k and v itself (passes/attention.h, half_operands).
  bool attention_half_operands = false;
  // f16/bf16 dtypes whose Matmuls stay in their dtype (the runtime has a GEMM that computes them
  // natively) instead of being widened to f32.
  std::vector<ir::DType> native_half_matmuls;
  // f16/bf16 Matmuls of at most this many rows (a short prompt's) that the runtime's GEMV kernel
  // computes a row at a time in their dtype (passes::is_gemv), rather than widening the weight.
  int64_t half_gemv_rows = 1;
  // The same for f32 Matmuls: the runtime's GEMV kernel computes a few rows at once in registers,
  // reading the weight in place instead of sgemm's packed copy.
  int64_t f32_gemv_rows = 1;
  // The same for bf16 Matmuls reading an int8 or group-quantized weight: the kernel dequantizes
  // each chunk of the weight once for all the rows (the cpu runtime: kQuantizedBf16PairGemvRows
  // where it multiplies bf16 pairs without AMX, else kF32GemvRows).
  int64_t quantized_bf16_gemv_rows = 1;
  // bf16 Matmuls of a bf16 weight with at most this many rows (a prompt's Linears) that the
  // runtime's GEMV kernel multiplies as bf16 pairs (passes::is_bf16_pair_gemv; the cpu runtime
  // where its kernels have AVX512-BF16: kBf16PairGemvRows, on AMX tiles where they have AMX-BF16,
  // codegen::GemvSpec::amx_tiles), ahead of the rows above and a native bf16 GEMM.
  int64_t bf16_pair_gemv_rows = 1;
  // The same for the column form (a [K, N] weight, GPT-2's Conv1D: passes::is_column_gemv), which
  // the cpu runtime takes where it multiplies bf16 pairs without AMX; with AMX, oneDNN's GEMM
  // keeps such prompts.
  int64_t bf16_pair_column_rows = 1;
  // f32 Matmuls through a [K, N] weight with more than one and at most this many rows (a known
  // count), which the cpu runtime's column kernel multiplies with the weight read in place
  // (passes::is_column_gemv) rather than sgemm's packed copy of it.
  int64_t f32_column_rows = 1;
  // GEMVs read int8 weights themselves (passes/quantized_weights.h): the runtime's GEMV kernel
  // widens them in registers.
  bool quantized_gemv_weights = false;
  // GEMVs of a weight quantized per group (torchao's int4) are one QuantizedGemv group
  // (passes/group_quantized_gemv.h): the runtime has a kernel that dequantizes in registers.
  bool group_quantized_gemvs = false;
};

}  // namespace luminal::passes
