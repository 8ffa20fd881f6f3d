#include "runtime/cpu/cpu_runtime.h"

#include <cblas.h>

#include <thread>

#include "runtime/cpu/build_program.h"
#include "runtime/cpu/cpu_executable.h"

namespace luminal::runtime::cpu {

std::unique_ptr<Executable> CpuRuntime::compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                                const CompileOptions& options) const {
  ir::verify(graph);
  const int threads = options.num_threads > 0 ? options.num_threads
                                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Program program = build_program(graph, options);
  // BLAS runs between our kernels, never beside them: it may use every thread we would.
  openblas_set_num_threads(threads);
  SearchOptions search{options.search_iterations, options.cache_dir, options.debug_dir};
  return std::make_unique<CpuExecutable>(std::move(program), weights, threads, std::move(search));
}

}  // namespace luminal::runtime::cpu
