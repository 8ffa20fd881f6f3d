// A small pool of worker threads for splitting a kernel's work items where no OpenMP team of
// torch's can take them (a C++ program without the Python module, a torch without OpenMP; the
// cpu runtime uses torch's team wherever there is one, CpuExecutable::split_across_threads). Ours, not an
// OpenMP runtime's: torch bundles its own libgomp and a second one would oversubscribe the cores.
// The workers start at the first parallel_for that needs them, so a process whose kernels all
// run on torch's team holds none.
// Idle workers spin for a while (a decode step runs hundreds of small kernels back to back, and
// calls follow each other with little Python between) and then sleep; the caller sends them to
// sleep at once before an ATen call, whose own threads need the cores. Work is handed out in chunks
// that threads claim as they arrive, and the caller never waits for a worker that has not
// started: on a machine shared with other processes a descheduled worker would otherwise hold
// up every kernel (a loaded 2-core box made decode several times slower that way).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace luminal::runtime::cpu {

class ThreadPool {
 public:
  using Task = void (*)(void* context, int64_t begin, int64_t end);

  explicit ThreadPool(int threads) : threads_(threads) {}
  ~ThreadPool();
  int threads() const { return threads_; }

  // Runs task over [0, items) in contiguous chunks (a few per thread) claimed by the caller and
  // whichever workers join in time; returns when all are done. Only one caller at a time uses
  // the workers: a concurrent caller runs its whole range itself. `task` must not throw.
  // A task whose every call pays a fixed cost (packing its operand) asks for chunks of at least
  // min_chunk items: it gets fewer chunks per thread, but never fewer than one per thread, and
  // every thread the same number.
  void parallel_for(int64_t items, Task task, void* context, int64_t min_chunk = 1);
  // Spinning workers go to sleep now, until the next parallel_for: the caller is about to run
  // something with threads of its own (an ATen call), which need the cores.
  void rest();

 private:
  void worker_loop();
  void run_chunks();

  const int threads_;
  std::vector<std::thread> workers_;  // threads_ - 1 of them once started (under busy_)
  std::mutex busy_;  // held by the caller that owns the workers
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};  // one per job; workers wake when it changes
  // The job's generation (high 32 bits), a closed flag, and how many workers joined it.
  std::atomic<uint64_t> admission_{0};
  std::atomic<int> finished_{0};  // joined workers done with the job
  std::atomic<int64_t> next_{0};  // the first unclaimed item
  std::atomic<bool> stop_{false};
  std::atomic<bool> resting_{false};
  Task task_ = nullptr;
  void* context_ = nullptr;
  int64_t items_ = 0;
  int64_t chunk_ = 1;
};

}  // namespace luminal::runtime::cpu
