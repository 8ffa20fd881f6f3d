#include "runtime/cpu/thread_pool.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace luminal::runtime::cpu {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}
// How long an idle worker spins before sleeping.
constexpr auto kSpin = std::chrono::microseconds(50);
}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t items, Task task, void* context) {
  const int n = threads();
  std::unique_lock<std::mutex> owner(busy_, std::try_to_lock);
  if (n == 1 || items <= 1 || !owner.owns_lock()) {
    task(context, 0, items);
    return;
  }
  task_ = task;
  context_ = context;
  items_ = items;
  remaining_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  const int64_t chunk = (items + n - 1) / n;
  task(context, 0, std::min(items, chunk));
  // Spin, but yield once the workers are late: on an oversubscribed machine a worker may not
  // be scheduled while we burn its core.
  for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 2000) cpu_relax();
    else std::this_thread::yield();
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  while (true) {
    // Spin for a while, then sleep until the generation changes.
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until)
      cpu_relax();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    const int n = threads();
    const int64_t chunk = (items_ + n - 1) / n;
    const int64_t begin = std::min(items_, chunk * index);
    const int64_t end = std::min(items_, begin + chunk);
    if (begin < end) task_(context_, begin, end);
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace luminal::runtime::cpu
