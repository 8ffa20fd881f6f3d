// The CPU runtime's Executable: runs a Program's steps over one arena of intermediates.
//
// Per distinct set of symbol values a CallPlan is computed once (buffer offsets from liveness,
// kernel symbol arguments, work sizes) and cached; arenas come from the process's pool
// (arena_pool.h), so a steady-state call (a decode step) allocates no tensor memory.
// Concurrent run() calls each take their own arena.
//
// A KV-cache update is written in place: a Scatter whose data is a caller's input, whose result
// is returned as that input's mutation, and whose old value no later step reads, writes the new
// rows straight into the caller's buffer when the caller passes that buffer as the output. Only
// the rows are written; the cache is never copied.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/collectives.h"
#include "runtime/cpu/arena_pool.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/in_place_scatter.h"
#include "runtime/cpu/int4_pairs.h"
#include "runtime/cpu/program.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

// The Scatter steps of `program` that may update a caller's buffer in place (in_place_scatter.h).
std::vector<InPlaceScatter> in_place_scatters(const Program& program);

// CompileOptions::search_iterations and where its results are kept (schedule search, search.h).
struct SearchOptions {
  int calls = 0;  // timed calls the search may make per distinct set of input shapes; 0: heuristics
  std::string cache_dir;  // results under cache_dir/search, keyed by program, shapes and machine
  std::string debug_dir;  // when set: search_log.txt, what the search timed and chose
  CpuIsa isa = CpuIsa::Native;  // the kernels' instruction sets, part of what a timing is valid for
};

class CpuExecutable final : public Executable {
 public:
  // `time_steps`: every call's steps are timed for last_run_stats (CompileOptions::time_steps).
  CpuExecutable(Program program, std::map<std::string, BufferRef> weights, int threads, SearchOptions search = {},
                bool time_steps = false);
  ~CpuExecutable() override;

  OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
           const LateOutputAllocator& allocate_late) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;
  RunStats last_run_stats() const override;
  // The weights whose values the decode GEMVs read packed two a byte (Slot::Kind::Int4Pairs).
  std::vector<std::string> copied_weights() const override;
  int64_t copied_weight_bytes() const override;

  const Program& program() const { return program_; }

 private:
  struct StepPlan;
  struct CallPlan;
  // The plan cache's key: the value of every symbol of the graph (-1 where unbound).
  std::vector<int64_t> plan_key(const ir::SymbolBindings& bindings) const;
  std::shared_ptr<const CallPlan> plan_for(const ir::SymbolBindings& bindings) const;
  StepPlan plan_step(const Step& step, const ir::SymbolBindings& bindings) const;
  // `plan` with the steps' choices from the schedule search (or the disk cache), which times
  // calls on these inputs with scratch outputs: the caller's tensors are never written.
  std::shared_ptr<const CallPlan> searched_plan(std::shared_ptr<const CallPlan> plan, const ir::SymbolBindings& bindings,
                                                const std::vector<BufferRef>& inputs,
                                                const std::vector<BufferRef>& outputs) const;
  // One call with `plan`; `step_us`, when given, receives each step's time.
  void execute(const CallPlan& plan, ir::SymbolBindings bindings, const std::vector<BufferRef>& inputs,
               const std::vector<BufferRef>& outputs, const LateOutputAllocator& allocate_late,
               std::vector<double>* step_us) const;
  // `in_flight` holds the call's issued collectives by step, until their wait steps.
  // `aten_matmuls` counts the ATen matmul calls it makes.
  void run_step(size_t index, const StepPlan& plan, const std::vector<void*>& ptr, const ir::SymbolBindings& bindings,
                Arena& arena, int64_t& bytes_copied, int64_t& aten_matmuls,
                std::vector<std::unique_ptr<InFlightCollective>>& in_flight) const;
  // A Kernel step (or a Gemm's few_rows kernel) with the plan's symbols, items and split.
  void run_kernel(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr, Arena& arena) const;
  // A kernel's chunks over `items` work items, split across threads when `parallel`; raises the
  // kernel's status naming the step.
  void launch(const Step& step, KernelFn fn, void** params, const int64_t* symbols, int64_t items,
              bool parallel) const;
  // task over [0, items) in chunks of at least min_chunk items across the threads kernels run on:
  // torch's OpenMP team wherever torch has one, else the pool.
  void split_across_threads(int64_t items, int64_t min_chunk, ThreadPool::Task task, void* context) const;
  // A BLAS product's output columns in one block per thread, each a single-threaded BLAS call
  // (gemm.h ColumnSplit).
  ColumnSplit blas_columns_split() const;
  // A GroupedGemm step with an expert GEMV (Step::few_rows): that kernel for each expert of 2
  // (bf16: 1) to Step::few_rows_limit rows, the others through ATen (groups_through_aten) or BLAS.
  // Returns the ATen matmul calls it made.
  int64_t expert_gemvs(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                       const ir::SymbolBindings& bindings, Arena& arena) const;
  // A Gemm step through ATen's matmul (the ATen fallback's executor), writing the step's output.
  void aten_matmul(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                   const ir::SymbolBindings& bindings) const;
  // A GroupedGemm step with groups_through_aten: one ATen matmul per group with rows. Returns the
  // calls it made.
  int64_t aten_grouped_matmul(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                              const ir::SymbolBindings& bindings) const;
  // Group g's rows [begin, end) of a GroupedGemm step times expert g through ATen's matmul.
  void aten_group_product(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                          const ir::SymbolBindings& bindings, int64_t g, int64_t begin, int64_t end) const;

  // With mutex_ held: packs the int4 pairs of each rebound weight that stayed bound through a
  // whole run since (int4_pairs_rebound_).
  void pack_settled_int4_pairs() const;

  Program program_;
  std::map<std::string, BufferRef> weights_;
  // Per slot: a Weight slot's entry in weights_ and what a call would otherwise work out from it
  // (whether its shape is static, so checked when bound; whether it is dense; the bytes it
  // spans), kept current by rebind_weight; empty for other slots. Guarded by mutex_.
  struct SlotWeight {
    const BufferRef* buffer = nullptr;
    bool static_shape = false;
    bool dense = false;
    int64_t bytes = 0;
  };
  std::vector<SlotWeight> slot_weights_;
  // Each Int4Pairs slot's weight's packed values, by weight name (null: not all int4 values, or
  // not packed since a rebind). A run holds the copies it reads, so a concurrent rebind replaces
  // rather than frees them. Guarded by mutex_.
  mutable std::map<std::string, std::shared_ptr<const Int4Pairs>> int4_pairs_;
  // Weights rebound since their pairs were packed, and the runs each has stayed bound through
  // since: packed once that is one. A graph dynamo reuses for several modules rebinds their
  // weights before every call; repacking each time cost more than the bytes it saved, so such
  // weights are read as bytes.
  mutable std::map<std::string, int> int4_pairs_rebound_;
  std::vector<InPlaceScatter> in_place_;
  SearchOptions search_;
  mutable ThreadPool pool_;
  int threads_;
  mutable std::mutex search_mutex_;  // one search at a time: its timings need the machine
  mutable std::mutex mutex_;  // guards plans_ and weights_
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const CallPlan>> plans_;
  std::shared_ptr<ArenaPool> arenas_ = ArenaPool::shared();
  mutable std::atomic<int64_t> last_bytes_copied_{0};
  mutable std::atomic<int64_t> last_collective_wait_ns_{0};
  mutable std::atomic<int64_t> last_aten_matmuls_{0};
  bool time_steps_ = false;
  std::vector<ir::NodeId> input_nodes_;  // the graph's Input nodes, bound on every call
  mutable std::mutex steps_mutex_;  // guards last_step_us_
  mutable std::vector<double> last_step_us_;
};

}  // namespace luminal::runtime::cpu
