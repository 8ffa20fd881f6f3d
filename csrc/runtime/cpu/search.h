// Schedule search (CompileOptions::search_iterations): which steps of a call run on the thread
// pool, which matmuls run through ATen's kernel (MKL in torch's CPU build) rather than
// OpenBLAS, and which tile each tiled kernel runs with (codegen::tile_candidates), chosen by
// timing whole calls on this machine with the call's real shapes.
//
// Per-step choices are judged by the step's own time inside whole calls, not by timing a step
// alone: a kernel run alone does not see how back-to-back kernels share the spinning pool
// workers (a per-kernel search chose worse than the heuristic for that reason, docs/lessons.md).
// Each configuration (the heuristic; every candidate step serial; every one on the pool; every
// candidate matmul through ATen; for each k, every tiled kernel with its k-th variant) is timed
// over the same number of calls, each step keeps the
// option whose median was fastest by a margin, and the result is kept only if whole calls are
// not slower than the heuristic's.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace luminal::runtime::cpu {

struct StepChoice {
  bool parallel = false;           // split the kernel's work items across the thread pool
  bool matmul_through_aten = false;  // a Gemm step through ATen's matmul instead of OpenBLAS
  int variant = -1;  // a Kernel step's variant (Step::variants) to run; -1: its default tile
};

// Which steps have an alternative worth timing.
struct SearchSpace {
  std::vector<bool> splittable;        // kernels with more than one work item
  std::vector<bool> aten_matmul;       // Gemm steps, when the ATen executor is installed
  std::vector<int> variants;           // per step, how many kernel variants it has
};

// One timed call: every step's time and the whole call's, in microseconds.
struct TimedCall {
  std::vector<double> step_us;
  double total_us = 0;
};
using TimeCall = std::function<TimedCall(const std::vector<StepChoice>&)>;

// The choices to run with, starting from `heuristic`. `calls` bounds the timed calls the search
// makes (search_iterations); it returns `heuristic` when that is too few to time the
// configurations it needs. Appends what it decided, and why, to `log`.
std::vector<StepChoice> search_schedule(const std::vector<StepChoice>& heuristic, const SearchSpace& space, int calls,
                                        const TimeCall& time_call, std::string& log);

// Whether a timing of `alternative_us` is reason to leave the current option's `current_us`:
// faster by a margin and by more than timer noise.
bool clearly_faster(double alternative_us, double current_us);
double median(std::vector<double> values);
// Appends to debug_dir/search_log.txt.
void append_search_log(const std::string& debug_dir, const std::string& text);
// Where a search result lives: cache_dir/search (the default cache dir when empty), named by the
// hash of `identity`, everything the result depends on.
std::string search_entry_path(const std::string& cache_dir, const std::string& identity, const std::string& extension);
// Writes a temporary file and renames it over `path`, so a concurrent reader sees all of an
// entry or none of it. An unwritable cache only costs the next process another search.
void write_entry(const std::string& path, const std::string& text);
// Called when an entry did not load: one that exists is damaged (a torn write, a foreign file),
// so it is removed and the user warned; the search then runs again and rewrites it.
void forget_unreadable_entry(const std::string& path);

// A search's result on disk: one line per step. load_choices is false (and leaves `choices`
// alone) when the file is missing or does not hold one well-formed line per step of `space`,
// each naming a variant the step has: a stale or damaged entry is searched again, never
// trusted. store_choices writes it with write_entry.
bool load_choices(const std::string& path, const SearchSpace& space, std::vector<StepChoice>& choices);
void store_choices(const std::string& path, const std::vector<StepChoice>& choices);

}  // namespace luminal::runtime::cpu
