// luminal._C._aten_parallel_for_chunks: how the ATen executor splits a kernel's items across
// torch's threads (where the cpu runtime runs its kernels), for tests: a header-only
// at::parallel_for once ran every chunk on the calling thread unnoticed.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/aten_fallback.h"

namespace py = pybind11;

namespace luminal::bindings {
namespace {

struct Chunks {
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  std::vector<std::tuple<int64_t, int64_t, int>> ranges;  // begin, end, the thread's index
};

// Each chunk takes a millisecond, so that every thread of the team claims some before the
// others have claimed them all.
void record(void* context, int64_t begin, int64_t end) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto& chunks = *static_cast<Chunks*>(context);
  std::lock_guard<std::mutex> lock(chunks.mutex);
  const std::thread::id me = std::this_thread::get_id();
  int index = 0;
  while (index < static_cast<int>(chunks.threads.size()) && chunks.threads[index] != me) ++index;
  if (index == static_cast<int>(chunks.threads.size())) chunks.threads.push_back(me);
  chunks.ranges.emplace_back(begin, end, index);
}

}  // namespace

void define_aten_threads(py::module_& m) {
  m.def(
      "_aten_parallel_for_chunks",
      [](int64_t items, int threads) -> std::optional<std::vector<std::tuple<int64_t, int64_t, int>>> {
        Chunks chunks;
        py::gil_scoped_release no_gil;
        if (!runtime::has_aten_call_executor() || !runtime::aten_parallel_for(items, threads, 1, record, &chunks))
          return std::nullopt;
        return chunks.ranges;
      },
      py::arg("items"), py::arg("threads"),
      "The (begin, end, thread) chunks the ATen executor's parallel_for ran [0, items) as on `threads` threads, "
      "threads numbered in order of appearance; None where it cannot split work (no OpenMP team).");
}

}  // namespace luminal::bindings
