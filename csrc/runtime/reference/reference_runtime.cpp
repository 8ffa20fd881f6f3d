#include "runtime/reference/reference_runtime.h"

#include <cblas.h>

#include "runtime/reference/reference_executable.h"

namespace luminal::runtime::reference {

std::unique_ptr<Executable> ReferenceRuntime::compile(const ir::Graph& graph,
                                                      const std::map<std::string, BufferRef>& weights,
                                                      const CompileOptions& options) const {
  auto executable = std::make_unique<ReferenceExecutable>(graph, weights);
  if (options.num_threads > 0) openblas_set_num_threads(options.num_threads);
  return executable;
}

}  // namespace luminal::runtime::reference
