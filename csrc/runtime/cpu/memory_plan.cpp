#include "runtime/cpu/memory_plan.h"

#include <algorithm>

namespace luminal::runtime::cpu {

MemoryPlan plan_memory(const std::vector<MemoryRequest>& requests, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), -1);
  std::vector<size_t> order;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].bytes >= 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  struct Placed {
    int64_t begin, end;
    int first, last;
  };
  std::vector<Placed> placed;
  const auto align = [&](int64_t v) { return (v + static_cast<int64_t>(alignment) - 1) / static_cast<int64_t>(alignment) * static_cast<int64_t>(alignment); };
  for (size_t i : order) {
    const MemoryRequest& r = requests[i];
    const int64_t size = align(std::max<int64_t>(r.bytes, 1));
    // Ranges taken by buffers live at the same time, sorted by start.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed)
      if (p.first <= r.last_step && r.first_step <= p.last) busy.push_back({p.begin, p.end});
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds it, else the end.
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b - cursor >= size && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best < 0) best = cursor;
    plan.offsets[i] = best;
    placed.push_back({best, best + size, r.first_step, r.last_step});
    plan.total_bytes = std::max<size_t>(plan.total_bytes, static_cast<size_t>(best + size));
  }
  return plan;
}

}  // namespace luminal::runtime::cpu
