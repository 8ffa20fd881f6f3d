// The CUDA runtime: generated kernels through NVRTC, GEMMs through cuBLASLt, segments replayed
// as CUDA graphs (cuda_executable.h). Creating it touches no driver or library: a machine
// without a GPU imports luminal and meets an error only when a model is compiled for CUDA.
#pragma once

#include <string>
#include <vector>

#include "runtime/cuda/nvrtc.h"
#include "runtime/factory_abi.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cuda {

// Where NVRTC and cuBLASLt are looked for; the Python module sets pip's wheels here at import.
// Takes effect for libraries not yet loaded.
void configure_cuda_libraries(NvrtcConfig nvrtc, std::vector<std::string> cublaslt);
// The process's compiler: its in-memory cache serves every model and the kernel checks.
NvrtcCompiler& process_nvrtc_compiler();

class CudaRuntime : public Runtime {
 public:
  std::string name() const override { return "cuda"; }
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                      const CompileOptions& options) const override;
};

// _C.cuda_factory_capsule().
const LuminalRuntimeFactory* cuda_runtime_factory();

}  // namespace luminal::runtime::cuda
