// Graph -> Program: runs the pass pipeline (passes/pipeline.h), lowers every group to kernel IR
// (codegen/lower.h), emits C++ (codegen/cpp/emit.h), builds it (jit.h), and lays out buffers.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/gemv_rows.h"
#include "runtime/cpu/jit.h"
#include "runtime/cpu/program.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

// The fusion decisions a program is built with. The default is the heuristic's; with the
// schedule search on, the runtime also builds the others that change its program and times them
// (fusion_search.h).
struct FusionChoice {
  // Attention as one pattern kernel (scores stay in cache), else BLAS GEMMs around a fused
  // softmax kernel (scores in memory, but the GEMMs at BLAS speed).
  bool attention_kernels = true;
  std::string describe() const;
};

// The half dtypes ATen's GEMM multiplies natively here (oneDNN with AVX-512 or AMX dot products),
// which the cpu runtime leaves to it.
std::vector<ir::DType> native_half_matmuls();

// The most rows (a prompt's) of each kind of Matmul the GEMV kernels built for `isa` take here
// (passes/gemv_rows.h), from codegen/kernel.h's measured thresholds and this CPU and BLAS.
passes::GemvRows cpu_gemv_rows(CpuIsa isa, const std::vector<ir::DType>& native_half_matmuls);

// The threads a program built with `options` runs on: num_threads, else every core.
int program_threads(const CompileOptions& options);

Program build_program(const ir::Graph& graph, const CompileOptions& options, const FusionChoice& fusion = {});

}  // namespace luminal::runtime::cpu
