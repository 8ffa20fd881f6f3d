// luminal._C._aten_parallel_for_chunks: how the ATen executor splits a kernel's items across
// torch's threads (the split the cpu runtime uses right after an ATen step), for tests: a
// header-only at::parallel_for once ran every chunk on the calling thread unnoticed.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

void record(void* context, int64_t begin, int64_t end) {
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
      [](int64_t items) -> std::optional<std::vector<std::tuple<int64_t, int64_t, int>>> {
        Chunks chunks;
        py::gil_scoped_release no_gil;
        if (!runtime::has_aten_call_executor() || !runtime::aten_parallel_for(items, record, &chunks))
          return std::nullopt;
        return chunks.ranges;
      },
      py::arg("items"),
      "The (begin, end, thread) chunks the ATen executor's parallel_for ran [0, items) as, threads numbered "
      "in order of appearance; None where it cannot split work (no OpenMP team).");
}

}  // namespace luminal::bindings
