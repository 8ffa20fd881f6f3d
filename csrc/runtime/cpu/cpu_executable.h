// The CPU runtime's Executable: runs a Program's steps over one arena of intermediates.
//
// Per distinct set of symbol values a CallPlan is computed once (buffer offsets from liveness,
// kernel symbol arguments, work sizes) and cached; arenas are pooled, so a steady-state call
// (a decode step) allocates no tensor memory. Concurrent run() calls each take their own arena.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cpu/program.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(Program program, std::map<std::string, BufferRef> weights, int threads);
  ~CpuExecutable() override;

  std::vector<std::vector<int64_t>> output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;

  const Program& program() const { return program_; }

 private:
  struct CallPlan;
  struct Arena;

  std::shared_ptr<const CallPlan> plan_for(const ir::SymbolBindings& bindings) const;
  std::unique_ptr<Arena> take_arena(size_t bytes) const;
  void give_back(std::unique_ptr<Arena> arena) const;

  Program program_;
  std::map<std::string, BufferRef> weights_;
  std::vector<ir::NodeId> weight_slot_nodes_;
  mutable ThreadPool pool_;
  mutable std::mutex mutex_;  // guards plans_ and arenas_
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const CallPlan>> plans_;
  mutable std::vector<std::unique_ptr<Arena>> arenas_;
};

}  // namespace luminal::runtime::cpu
