// The CPU runtime's thread pool: every item runs exactly once whatever the item count, jobs
// back to back do not mix, and a worker that is busy elsewhere does not hold up the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
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

struct Chunks {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

void record_chunk(void* context, int64_t begin, int64_t end) {
  auto* chunks = static_cast<Chunks*>(context);
  std::lock_guard<std::mutex> lock(chunks->mutex);
  chunks->ranges.emplace_back(begin, end);
}

// The chunk sizes one job was split into, in order of their first item.
std::vector<int64_t> chunk_sizes(ThreadPool& pool, int64_t items, int64_t min_chunk) {
  Chunks chunks;
  pool.parallel_for(items, record_chunk, &chunks, min_chunk);
  std::sort(chunks.ranges.begin(), chunks.ranges.end());
  std::vector<int64_t> sizes;
  int64_t next = 0;
  for (const auto& [begin, end] : chunks.ranges) {
    EXPECT_EQ(begin, next) << "items " << items << " min_chunk " << min_chunk;
    sizes.push_back(end - begin);
    next = end;
  }
  EXPECT_EQ(next, items);
  return sizes;
}

TEST(ThreadPool, ChunksHoldAtLeastTheTasksMinimumButOnePerThreadRemains) {
  // A GEMV that packs its activations in every call asks for large chunks (kGemvStripsChunkRows):
  // four chunks a thread of 768 weight rows packed eight times where two do.
  ThreadPool pool(2);
  EXPECT_EQ(chunk_sizes(pool, 768, 1), (std::vector<int64_t>(8, 96)));
  EXPECT_EQ(chunk_sizes(pool, 768, 384), (std::vector<int64_t>{384, 384}));
  EXPECT_EQ(chunk_sizes(pool, 3072, 384), (std::vector<int64_t>(8, 384)));
  // As many chunks for each thread: 1024 rows in two, not 384 + 384 + 256; 2816 in six.
  EXPECT_EQ(chunk_sizes(pool, 1024, 384), (std::vector<int64_t>{512, 512}));
  EXPECT_EQ(chunk_sizes(pool, 2816, 384), (std::vector<int64_t>{470, 470, 470, 470, 470, 466}));
  // Fewer items than two chunks of the minimum: still one chunk a thread, not one in all.
  EXPECT_EQ(chunk_sizes(pool, 256, 384), (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(chunk_sizes(pool, 5, 384), (std::vector<int64_t>{3, 2}));
}

}  // namespace
}  // namespace luminal::testing
