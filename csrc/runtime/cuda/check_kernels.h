// Verifying the CUDA runtime's plan without a GPU: build a graph's program as the CUDA runtime
// would (cuda_program.h) and compile every distinct kernel with NVRTC for each architecture.
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
  size_t segments = 0;          // runs of steps replayed as one CUDA graph each
  std::vector<std::string> host_steps;  // steps outside graphs (ATen calls, MoE group sizes, ...)
  size_t in_place_updates = 0;  // scatters that may write into the caller's buffer (KV caches)
  size_t bias_epilogues = 0;    // bias adds computed by their GEMM's epilogue
};

KernelCheckReport check_kernels(const ir::Graph& graph, const std::vector<std::string>& archs, ImageKind kind,
                                NvrtcCompiler& compiler);

}  // namespace luminal::runtime::cuda
