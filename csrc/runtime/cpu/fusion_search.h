// The schedule search's fusion choices (CompileOptions::search_iterations): the graph built under
// each FusionChoice that changes its program, one CpuExecutable each, which does its own step
// search (search.h) on its first call. On the first call of each set of input shapes, whole
// calls of every alternative are timed on those inputs with scratch outputs (scratch_calls.h);
// the default (the heuristic's fusion) stays unless another is faster by a margin. The choice is
// cached under cache_dir/search like the step choices, keyed by the default's program, the
// alternatives' fusion choices, the shapes, the threads and the machine. Alternatives are built
// when first needed, so a process whose choices all come from the cache builds only those it
// runs.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cpu/build_program.h"
#include "runtime/cpu/cpu_executable.h"

namespace luminal::runtime::cpu {

class FusionSearchExecutable final : public Executable {
 public:
  // Builds the graph under one fusion choice, bound to these weights.
  using Build =
      std::function<std::unique_ptr<CpuExecutable>(const FusionChoice&, const std::map<std::string, BufferRef>&)>;
  // `fusions[0]` is the default, which `default_executable` was built with.
  FusionSearchExecutable(std::unique_ptr<CpuExecutable> default_executable, std::vector<FusionChoice> fusions,
                         Build build, std::map<std::string, BufferRef> weights, SearchOptions search, int threads);

  OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
           const LateOutputAllocator& allocate_late) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;
  RunStats last_run_stats() const override;
  std::vector<std::string> copied_weights() const override;
  int64_t copied_weight_bytes() const override;

  // The executable of fusions[i], built now if it was not yet.
  const CpuExecutable& alternative(size_t i) const;

 private:
  using ShapeKey = std::vector<std::vector<int64_t>>;
  // The alternative for these inputs' shapes: from the disk cache, or timed now.
  size_t choose(const ShapeKey& key, const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs) const;
  const CpuExecutable& built(size_t i) const;  // with search_mutex_ held

  std::vector<FusionChoice> fusions_;
  Build build_;
  SearchOptions search_;
  int threads_;
  mutable std::mutex search_mutex_;  // one search or build at a time: timings need the machine
  mutable std::mutex mutex_;         // guards chosen_ and weights_
  mutable std::vector<std::unique_ptr<CpuExecutable>> alternatives_;  // null until built
  std::map<std::string, BufferRef> weights_;  // for the alternatives built later
  mutable std::map<ShapeKey, size_t> chosen_;
  mutable std::atomic<size_t> last_{0};
};

}  // namespace luminal::runtime::cpu
