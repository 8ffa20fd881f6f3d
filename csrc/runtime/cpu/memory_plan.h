// Arena layout from liveness: buffers whose lifetimes overlap get disjoint byte ranges, the
// others share memory. Greedy best-fit by decreasing size (the usual offline heuristic; it
// needs at most the peak of live bytes in practice). Computed once per distinct shape set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace luminal::runtime::cpu {

struct MemoryRequest {
  int64_t bytes = -1;  // < 0: not in the arena
  int first_step = 0;  // live over [first_step, last_step], inclusive
  int last_step = 0;
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per request; -1 for those not in the arena
  size_t total_bytes = 0;
};

MemoryPlan plan_memory(const std::vector<MemoryRequest>& requests, size_t alignment);

}  // namespace luminal::runtime::cpu
