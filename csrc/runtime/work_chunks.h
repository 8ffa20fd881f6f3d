// How a parallel loop's items split into chunks, for every pool that runs the cpu runtime's
// kernels (our own ThreadPool, torch's OpenMP team through the ATen executor): chunks claimed
// one at a time from a shared counter, so that a thread that starts late or runs slow has its
// share picked up by the others.
#pragma once

#include <algorithm>
#include <cstdint>

namespace luminal::runtime {

// Chunks per thread where nothing asks for fewer.
constexpr int64_t kChunksPerThread = 4;

// Items per chunk for `items` over `threads`: the same number of chunks for every thread (three
// chunks of a 1024-row GEMV on two threads left one thread a whole chunk alone at the end: 5-10%
// slower than two). A task whose every call pays a fixed cost (packing its operand) asks for
// chunks of at least min_chunk items: it gets fewer chunks per thread, never fewer than one.
inline int64_t work_chunk_items(int64_t items, int64_t threads, int64_t min_chunk) {
  const int64_t per_thread =
      min_chunk > 1 ? std::clamp<int64_t>(items / (threads * min_chunk), 1, kChunksPerThread) : kChunksPerThread;
  const int64_t chunks = threads * per_thread;
  return std::max<int64_t>(1, (items + chunks - 1) / chunks);
}

}  // namespace luminal::runtime
