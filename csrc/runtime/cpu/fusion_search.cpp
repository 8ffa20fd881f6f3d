#include "runtime/cpu/fusion_search.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "runtime/cpu/jit.h"
#include "runtime/cpu/scratch_calls.h"
#include "runtime/cpu/search.h"

namespace luminal::runtime::cpu {

namespace {

// Timed whole calls per alternative, after one untimed call (which runs that alternative's own
// step search on these shapes): an alternative's program differs in many steps, so a few calls
// tell them apart.
constexpr int kRuns = 5;

bool read_choice(const std::string& path, size_t alternatives, size_t& choice) {
  std::ifstream in(path);
  size_t value = 0;
  std::string rest;
  if (!(in >> value) || in >> rest || value >= alternatives) return false;
  choice = value;
  return true;
}

}  // namespace

FusionSearchExecutable::FusionSearchExecutable(std::unique_ptr<CpuExecutable> default_executable,
                                               std::vector<FusionChoice> fusions, Build build,
                                               std::map<std::string, BufferRef> weights, SearchOptions search,
                                               int threads)
    : fusions_(std::move(fusions)), build_(std::move(build)), search_(std::move(search)), threads_(threads),
      alternatives_(fusions_.size()), weights_(std::move(weights)) {
  INTERNAL_CHECK(default_executable && !fusions_.empty()) << "a fusion search needs its default";
  alternatives_[0] = std::move(default_executable);
}

OutputShapes FusionSearchExecutable::output_shapes(const std::vector<BufferRef>& inputs) const {
  return alternatives_[0]->output_shapes(inputs);
}

void FusionSearchExecutable::rebind_weight(const std::string& name, const BufferRef& buffer) {
  std::lock_guard<std::mutex> building(search_mutex_);
  alternatives_[0]->rebind_weight(name, buffer);  // checks the name and the buffer first
  for (size_t i = 1; i < alternatives_.size(); ++i)
    if (alternatives_[i]) alternatives_[i]->rebind_weight(name, buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  weights_[name] = buffer;
}

RunStats FusionSearchExecutable::last_run_stats() const { return alternatives_[last_.load()]->last_run_stats(); }

// Every alternative computes the same Linears from one graph: the same weights are copied.
std::vector<std::string> FusionSearchExecutable::copied_weights() const { return alternatives_[0]->copied_weights(); }

// Each alternative built holds its own copies.
int64_t FusionSearchExecutable::copied_weight_bytes() const {
  std::lock_guard<std::mutex> building(search_mutex_);
  int64_t bytes = 0;
  for (const auto& alternative : alternatives_)
    if (alternative) bytes += alternative->copied_weight_bytes();
  return bytes;
}

const CpuExecutable& FusionSearchExecutable::built(size_t i) const {
  if (!alternatives_[i]) {
    std::map<std::string, BufferRef> weights;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      weights = weights_;
    }
    alternatives_[i] = build_(fusions_[i], weights);
  }
  return *alternatives_[i];
}

const CpuExecutable& FusionSearchExecutable::alternative(size_t i) const {
  std::lock_guard<std::mutex> building(search_mutex_);
  return built(i);
}

size_t FusionSearchExecutable::choose(const ShapeKey& key, const std::vector<BufferRef>& inputs,
                                      const std::vector<BufferRef>& outputs) const {
  std::lock_guard<std::mutex> one_search(search_mutex_);
  {
    // Another call may have searched these shapes while this one waited.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = chosen_.find(key);
    if (it != chosen_.end()) return it->second;
  }
  std::ostringstream identity;
  identity << "fusion search 1\n" << toolchain_identity(search_.isa) << "\nthreads " << threads_ << "\n";
  for (const FusionChoice& fusion : fusions_) identity << fusion.describe() << "\n";
  for (const Step& step : alternatives_[0]->program().steps)
    identity << static_cast<int>(step.kind) << " " << step.kernel_name << " " << step.what << "\n";
  for (const std::vector<int64_t>& sizes : key) {
    for (int64_t size : sizes) identity << size << " ";
    identity << "\n";
  }
  const std::string path = search_entry_path(search_.cache_dir, identity.str(), ".fusion");

  size_t choice = 0;
  std::ostringstream log;
  if (read_choice(path, fusions_.size(), choice)) {
    built(choice);
    log << "fusion: " << fusions_[choice].describe() << ", the choice from " << path << "\n";
  } else {
    forget_unreadable_entry(path);
    const Program& program = alternatives_[0]->program();
    ScratchCalls scratch(inputs, outputs, alternatives_[0]->output_shapes(inputs),
                         [&](size_t k) { return program.graph.node(program.outputs[k].ref.node).dtype; });
    std::vector<double> medians;
    for (size_t i = 0; i < fusions_.size(); ++i) {
      const CpuExecutable& alternative = built(i);
      std::vector<double> times;
      for (int r = 0; r <= kRuns; ++r) {
        scratch.reset();
        const auto start = std::chrono::steady_clock::now();
        alternative.run(scratch.inputs(), scratch.outputs(), scratch.allocate_late());
        if (r > 0) times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      }
      medians.push_back(median(times));
    }
    log << "fusion:";
    for (size_t i = 0; i < fusions_.size(); ++i) {
      log << (i ? ", " : " ") << fusions_[i].describe() << " " << medians[i] << " us";
      if (clearly_faster(medians[i], medians[choice])) choice = i;
    }
    log << " per call (median of " << kRuns << "); keeps " << fusions_[choice].describe() << "\n";
    write_entry(path, std::to_string(choice) + "\n");
  }
  if (!search_.debug_dir.empty()) append_search_log(search_.debug_dir, log.str());
  std::lock_guard<std::mutex> lock(mutex_);
  if (chosen_.size() > 64) chosen_.clear();  // a bound on distinct shapes kept
  chosen_[key] = choice;
  return choice;
}

void FusionSearchExecutable::run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
                                 const LateOutputAllocator& allocate_late) const {
  ShapeKey key;
  key.reserve(inputs.size());
  for (const BufferRef& input : inputs) key.push_back(input.sizes);
  size_t choice = 0;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = chosen_.find(key);
    if (it != chosen_.end()) {
      choice = it->second;
      known = true;
    }
  }
  if (!known) {
    // Shapes the graph rejects fail here, before any timed call, with the default's message.
    alternatives_[0]->output_shapes(inputs);
    choice = choose(key, inputs, outputs);
  }
  last_.store(choice);
  alternatives_[choice]->run(inputs, outputs, allocate_late);
}

}  // namespace luminal::runtime::cpu
