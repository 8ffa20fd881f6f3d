// Kernel IR -> one CUDA C translation unit (the prelude plus one __global__ function).
//
// The value-level text (loads, ops, rounding, literals) comes from the CUDA op table, which is
// the C++ table with CUDA overrides; index expressions are the C++ emitter's. What is CUDA's
// own is how the kernel's work maps onto the grid (LaunchSpec):
//   Elementwise (pointwise loop kernels): one thread per domain element, grid-stride loop.
//     Scan kernels launch the same way with their rows as the work: one thread per row walks
//     the scanned axis in order (the reference's order of additions).
//   Row (loop kernels with a reduce axis): one block per row (grid-stride over rows); the
//     block's threads stride the reduce axis, each reduction merges its per-thread partial
//     accumulators with warp shuffles and shared memory, and every thread gets the result.
//   Warp (Gemv): one warp per output element, lanes stride K (in 16-byte chunks where both
//     rows are aligned), a shuffle reduction.
//   Scatter: an accumulating scatter is a one-block launch (Single): copy data to out, then
//     scatter on one thread, in order, as the reference does (correct, not fast). A plain one
//     launches over its index elements (Elementwise): updating its data in place (a KV cache)
//     the whole grid scatters; copying data to out first, block 0 alone copies, then scatters.
//   Attention: one block per query tile of a head (the C++ kernel's blocks of query rows, see
//     attention_rows_per_block), grid-stride over tiles. Where the tile's query rows and 32
//     keys fit in shared memory, the block stages them there and each warp computes several
//     rows against every key tile; a decode step's single row splits its key tiles over 8
//     warps; otherwise one warp per query row, its lanes striding the keys for scores and the
//     value columns for the output.
//
// Signature: extern "C" __global__ void NAME(P0 p0, P1 p1, ..., int64_t S_<symbol>...,
// int64_t* lm_info): the kernel's params as typed device pointers, then the values of
// Kernel::symbols() in order, then a 3-element device buffer that the launcher zeroes and reads
// back: lm_info[0] is 0 or the first error code a thread hit (cpp::KernelStatus: 1 gather index
// out of range, 2 max/min over an empty axis, 3 integer division by zero), lm_info[1..2] its
// details. A thread that hits an error records it and carries on with a clamped index (it never
// returns early: row kernels synchronise their block), so the launcher must check lm_info.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel.h"

namespace luminal::codegen::cuda {

struct LaunchSpec {
  enum class Kind { Elementwise, Row, Warp, Single, Attention } kind = Kind::Elementwise;
  int block_threads = 256;  // the kernel's __launch_bounds__; a multiple of 32
  // Elementwise: elements (a scan's rows); Row: rows; Warp: output elements; Single: 1;
  // Attention: query tiles (heads x tiles per head). The launcher's grid is
  // ceil(work / per_block) blocks, capped (every kernel grid-strides), where per_block is
  // block_threads, 1, block_threads / 32 and 1 for Elementwise, Row, Warp and Attention.
  ir::Expr work;
};

const char* launch_kind_name(LaunchSpec::Kind kind);

struct CudaKernelSource {
  std::string name;
  std::string source;  // a complete translation unit: prelude + the kernel
  LaunchSpec launch;
  std::vector<std::string> symbols;  // Kernel::symbols(): the kernel's int64_t arguments
  bool uses_halves = false;          // includes cuda_fp16.h / cuda_bf16.h
};

// Deterministic: the same kernel gives the same text.
CudaKernelSource emit_kernel(const Kernel& kernel, const std::string& name);

// The query rows an Attention kernel's block computes: Kernel::tile (kAttentionRows when 0)
// rounded up to the C++ kernel's 6-row tile, so that both runtimes split a head's rows into
// the same blocks and skip the same key columns (those whose bias is -inf for every row of a
// block).
int64_t attention_rows_per_block(const Kernel& kernel);

}  // namespace luminal::codegen::cuda
