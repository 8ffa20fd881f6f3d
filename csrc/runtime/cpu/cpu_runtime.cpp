#include "runtime/cpu/cpu_runtime.h"

#include <cblas.h>

#include <filesystem>

#include "runtime/cpu/build_program.h"
#include "runtime/cpu/cpu_executable.h"
#include "runtime/cpu/fusion_search.h"

namespace luminal::runtime::cpu {

std::unique_ptr<Executable> CpuRuntime::compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                                const CompileOptions& options) const {
  ir::verify(graph);
  const int threads = program_threads(options);
  Program program = build_program(graph, options);
  // BLAS runs single-threaded, one block of a product's columns on each thread our kernels run
  // on (CpuExecutable::blas_columns_split): its own threads would run beside that team's.
  openblas_set_num_threads(1);
  SearchOptions search{options.search_iterations, options.cache_dir, options.debug_dir, parse_cpu_isa(options.cpu_isa)};
  if (options.search_iterations == 0 || program.attention_kernels == 0)
    return std::make_unique<CpuExecutable>(std::move(program), weights, threads, std::move(search), options.time_steps);
  // The fusion choice that changes this program, built should the search need it: attention
  // as GEMMs around a softmax kernel. Its debug output goes to a directory of its own.
  const FusionChoice unfused{false};
  CompileOptions alternative_options = options;
  if (!options.debug_dir.empty())
    alternative_options.debug_dir = (std::filesystem::path(options.debug_dir) / "fusion_gemms_around_softmax").string();
  const FusionSearchExecutable::Build build = [graph, alternative_options, threads](
                                                  const FusionChoice& fusion,
                                                  const std::map<std::string, BufferRef>& bound) {
    SearchOptions search{alternative_options.search_iterations, alternative_options.cache_dir,
                         alternative_options.debug_dir, parse_cpu_isa(alternative_options.cpu_isa)};
    return std::make_unique<CpuExecutable>(build_program(graph, alternative_options, fusion), bound, threads, search,
                                           alternative_options.time_steps);
  };
  return std::make_unique<FusionSearchExecutable>(
      std::make_unique<CpuExecutable>(std::move(program), weights, threads, search, options.time_steps),
      std::vector<FusionChoice>{FusionChoice{}, unfused}, build, weights, std::move(search), threads);
}

}  // namespace luminal::runtime::cpu
