// The optimising CPU runtime: fuses the graph into loop kernels, generates C++ for them,
// compiles and caches it (jit.h), calls BLAS for GEMM, and runs over a planned arena.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

class CpuRuntime final : public Runtime {
 public:
  std::string name() const override { return "cpu"; }
  // CompileOptions::num_threads > 0 also sets OpenBLAS's thread count, which is process-wide.
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                      const CompileOptions& options) const override;
};

}  // namespace luminal::runtime::cpu
