// The CPU runtime's thread pool: every item runs exactly once whatever the item count, jobs
// back to back do not mix, and a worker that is busy elsewhere does not hold up the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/cpu/thread_pool.h"

namespace luminal::testing {
namespace {

using runtime::cpu::ThreadPool;

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
};

void count_items(void* context, int64_t begin, int64_t end) {
  auto* counts = static_cast<Counts*>(context);
  for (int64_t i = begin; i < end; ++i) counts->hits[i].fetch_add(1);
}

TEST(ThreadPool, EveryItemRunsOnceAcrossManyJobs) {
  ThreadPool pool(2);
  for (int64_t items : {0, 1, 2, 3, 7, 8, 9, 64, 1000, 4097}) {
    for (int job = 0; job < 200; ++job) {
      Counts counts(static_cast<size_t>(items));
      pool.parallel_for(items, count_items, &counts);
      for (int64_t i = 0; i < items; ++i) ASSERT_EQ(counts.hits[i].load(), 1) << "items " << items << " item " << i;
    }
  }
}

void slow_items(void* context, int64_t begin, int64_t end) {
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  count_items(context, begin, end);
}

TEST(ThreadPool, CallerFinishesTheJobWhenWorkersAreLate) {
  // Workers asleep (long idle) must not lose items, whichever thread claims them.
  ThreadPool pool(3);
  for (int job = 0; job < 20; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Counts counts(50);
    pool.parallel_for(50, slow_items, &counts);
    for (int64_t i = 0; i < 50; ++i) ASSERT_EQ(counts.hits[i].load(), 1);
  }
}

TEST(ThreadPool, ConcurrentCallersRunTheirOwnRanges) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int job = 0; job < 100; ++job) {
        Counts counts(333);
        pool.parallel_for(333, count_items, &counts);
        for (int64_t i = 0; i < 333; ++i) wrong += counts.hits[i].load() != 1;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace luminal::testing
