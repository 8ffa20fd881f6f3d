// What every pass may read besides the graph: where to dump IR, and the fusion log. Passed
// explicitly (no ambient state).
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "passes/gemv_rows.h"

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
  // The most rows of each kind of Matmul the runtime's GEMV kernel computes (all 1: only M = 1).
  GemvRows gemv_rows;
  // GEMVs read int8 weights themselves (passes/quantized_weights.h): the runtime's GEMV kernel
  // widens them in registers.
  bool quantized_gemv_weights = false;
  // GEMVs of a weight quantized per group (torchao's int4) are one QuantizedGemv group
  // (passes/group_quantized_gemv.h): the runtime has a kernel that dequantizes in registers.
  bool group_quantized_gemvs = false;
};

}  // namespace luminal::passes
