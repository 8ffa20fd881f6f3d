// Verifying the CUDA code generator without a GPU: plan a graph's kernels as the CUDA runtime
// would (kernel_plan.h) and compile every distinct kernel with NVRTC for each architecture.
// No device or driver is touched; only NVRTC is loaded.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/cuda/nvrtc.h"

namespace luminal::runtime::cuda {

struct KernelCheck {
  std::string name;
  std::string what;    // label and origin
  std::string launch;  // codegen::cuda::launch_kind_name
  std::string source;
  std::vector<std::string> symbols;
  int launches = 0;  // steps that launch this kernel
  std::map<std::string, std::shared_ptr<const CompiledImage>> images;  // by arch
};

struct KernelCheckReport {
  std::vector<KernelCheck> kernels;        // distinct kernels, in first-use order
  std::vector<std::string> library_steps;  // steps no generated kernel computes (cuBLASLt GEMMs, ...)
};

KernelCheckReport check_kernels(const ir::Graph& graph, const std::vector<std::string>& archs, ImageKind kind,
                                NvrtcCompiler& compiler);

}  // namespace luminal::runtime::cuda
