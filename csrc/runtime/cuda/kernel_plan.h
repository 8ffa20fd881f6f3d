// The CUDA runtime's steps for a graph: the CPU runtime's optimisation pipeline
// (passes::plan_kernels), then every group lowered to the kernel IR and emitted as CUDA C, or
// marked as a library call (a GEMM for cuBLASLt, an MoE grouped matmul, an ATen fallback op)
// that no kernel computes.
//
// Which matmuls are generated: GEMVs (passes::is_gemv) as the warp-per-output GEMV kernel,
// integer matmuls and other M = 1 products as row kernels (cuBLAS has no integer GEMM; an M = 1
// product is memory bound); every other matmul is a cuBLASLt GEMM, f16/bf16 ones in their dtype.
// Scaled dot-product attention is the attention pattern kernel (one block per query tile).
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/emit.h"
#include "codegen/lower.h"
#include "ir/graph.h"
#include "passes/pass_context.h"

namespace luminal::runtime::cuda {

struct CudaStep {
  enum class Kind { Kernel, Library } kind = Kind::Kernel;
  std::string what;  // the kernel label or library call, and the aten op it came from
  // The group's nodes; a Library step computes nodes[0] (a Matmul, GroupedMatmul or AtenCall).
  std::vector<ir::NodeId> nodes;
  // Kernel: the lowered kernel and its CUDA source; the kernel is named "lm_<group kind>_" + the
  // hash of its text, so identical kernels (every layer's) share one name and one compiled module.
  codegen::LoweredKernel lowered;
  codegen::cuda::CudaKernelSource cuda;
};

struct CudaKernelPlan {
  ir::Graph graph;  // the optimised graph the steps' nodes refer to
  std::vector<CudaStep> steps;
};

CudaKernelPlan plan_cuda_kernels(const ir::Graph& graph, passes::PassContext& cx);

}  // namespace luminal::runtime::cuda
