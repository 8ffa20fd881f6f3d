#include "runtime/cpu/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/work_chunks.h"

namespace luminal::runtime::cpu {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}
// How long an idle worker spins before sleeping. Long enough to bridge the Python between two
// calls of a compiled model (dynamo's guards and wrappers take 30-100 us here): a worker that
// has gone to sleep takes tens of microseconds to wake, and a small kernel is over by then, so
// it runs on one thread. libgomp, which eager and inductor use, spins on the same scale.
constexpr auto kSpin = std::chrono::microseconds(1000);
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kJoinedMask = kClosed - 1;
}  // namespace

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (int64_t begin; (begin = next_.fetch_add(chunk_, std::memory_order_relaxed)) < items_;)
    task_(context_, begin, std::min(items_, begin + chunk_));
}

void ThreadPool::parallel_for(int64_t items, Task task, void* context, int64_t min_chunk) {
  const int n = threads();
  std::unique_lock<std::mutex> owner(busy_, std::try_to_lock);
  if (n == 1 || items <= 1 || !owner.owns_lock()) {
    task(context, 0, items);
    return;
  }
  while (static_cast<int>(workers_.size()) < n - 1) {
    workers_.emplace_back([this] { worker_loop(); });
    // Named, so that top -H and perf tell our workers from torch's OpenMP threads.
    pthread_setname_np(workers_.back().native_handle(), "luminal-pool");
  }
  resting_.store(false, std::memory_order_relaxed);
  task_ = task;
  context_ = context;
  items_ = items;
  chunk_ = work_chunk_items(items, n, min_chunk);
  next_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
    admission_.store(generation << 32, std::memory_order_release);
    generation_.store(generation, std::memory_order_release);
  }
  wake_.notify_all();
  run_chunks();
  // Close the job: a worker that wakes from now on finds nothing to do and is not waited for.
  const int joined = static_cast<int>(admission_.fetch_or(kClosed, std::memory_order_acq_rel) & kJoinedMask);
  for (int spins = 0; finished_.load(std::memory_order_acquire) != joined; ++spins) {
    if (spins < 2000) cpu_relax();
    else std::this_thread::yield();
  }
}

void ThreadPool::rest() { resting_.store(true, std::memory_order_relaxed); }

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    // Spin for a while, then sleep until the generation changes.
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && !resting_.load(std::memory_order_relaxed) &&
           std::chrono::steady_clock::now() < spin_until)
      cpu_relax();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    // Join the job unless it is closed or already superseded by the next one.
    uint64_t admission = admission_.load(std::memory_order_acquire);
    bool joined = false;
    while (!joined && (admission >> 32) == (seen & 0xffffffffu) && !(admission & kClosed))
      joined = admission_.compare_exchange_weak(admission, admission + 1, std::memory_order_acq_rel,
                                                std::memory_order_acquire);
    if (!joined) continue;
    run_chunks();
    finished_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace luminal::runtime::cpu
