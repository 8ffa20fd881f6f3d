// The CPU runtime's in-place KV-cache rule: a Scatter whose result is returned into the very
// buffer it updates writes only the new rows there, and RunStats counts those bytes, not the
// cache. Every case where the old value is still needed must take the copy path and stay right.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "cpu_test_util.h"
#include "runtime/cpu/cpu_executable.h"

namespace luminal::testing {
namespace {

constexpr int64_t kRows = 6;
constexpr int64_t kWidth = 4;
constexpr int64_t kRowBytes = kWidth * 4;
constexpr int64_t kCacheBytes = kRows * kWidth * 4;

HostTensor cache_tensor() {
  std::vector<float> values;
  for (int64_t i = 0; i < kRows * kWidth; ++i) values.push_back(static_cast<float>(i));
  return HostTensor::of<float>(DType::F32, {kRows, kWidth}, values);
}

// The cache after row `position` is overwritten with `value`.
std::vector<float> updated(int64_t position, float value) {
  std::vector<float> values = cache_tensor().values<float>();
  for (int64_t c = 0; c < kWidth; ++c) values[position * kWidth + c] = value;
  return values;
}

std::vector<float> column_sums(const std::vector<float>& values) {
  std::vector<float> sums(kWidth, 0.0f);
  for (int64_t i = 0; i < kRows * kWidth; ++i) sums[i % kWidth] += values[i];
  return sums;
}

const runtime::cpu::Program& program_of(const runtime::Executable& executable) {
  return dynamic_cast<const runtime::cpu::CpuExecutable&>(executable).program();
}

// cache [6, 4] f32, index [1, 4] i64, row [1, 4] f32: the StaticCache index_copy_ shape.
struct CacheGraph {
  IrTestBuilder b;
  TensorRef cache, index, row, updated;
  explicit CacheGraph(bool cache_is_weight = false) {
    cache = cache_is_weight ? b.weight("cache", DType::F32, {kRows, kWidth})
                            : b.input("cache", DType::F32, {kRows, kWidth});
    index = b.input("index", DType::I64, {1, kWidth});
    row = b.input("row", DType::F32, {1, kWidth});
    updated = b.scatter(cache, index, row, 0, false);
  }
};

TEST(CpuInPlace, ScatterWritesTheRowIntoTheCallersCache) {
  CacheGraph g;
  g.b.output(g.updated);
  g.b.output(g.b.reduce(Op::SumReduce, g.updated, 0));  // a later reader of the new value
  auto executable = compile_cpu(g.b.graph);
  ASSERT_EQ(runtime::cpu::in_place_scatters(program_of(*executable)).size(), 1u);
  HostTensor cache = cache_tensor();
  const std::byte* cache_memory = cache.bytes.data();
  HostTensor sums = HostTensor::zeros(DType::F32, {1, kWidth});
  for (int64_t position : {2, 5}) {
    HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, position));
    HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, -1.0f));
    // Reset the cache's values in its own memory: a new HostTensor would be a new allocation.
    const HostTensor fresh = cache_tensor();
    std::copy(fresh.bytes.begin(), fresh.bytes.end(), cache.bytes.begin());
    executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), sums.ref()}, {});
    EXPECT_EQ(cache.values<float>(), updated(position, -1.0f));
    EXPECT_EQ(sums.values<float>(), column_sums(updated(position, -1.0f)));
    // The row written, nothing else: the sum's kernel writes straight into its output.
    EXPECT_EQ(executable->last_run_stats().bytes_copied, kRowBytes);
  }
  EXPECT_EQ(cache.bytes.data(), cache_memory);
}

TEST(CpuInPlace, ScatterIntoABoundWeightBuffer) {
  // A registered buffer used as the cache (BufferMutation) arrives as a Weight.
  CacheGraph g(/*cache_is_weight=*/true);
  g.b.output(g.updated);
  HostTensor cache = cache_tensor();
  auto executable = compile_cpu(g.b.graph, {{"cache", cache.ref()}});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 3));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, 7.0f));
  executable->run({index.ref(), row.ref()}, {cache.ref()}, {});
  EXPECT_EQ(cache.values<float>(), updated(3, 7.0f));
  EXPECT_EQ(executable->last_run_stats().bytes_copied, kRowBytes);
}

TEST(CpuInPlace, AFreshOutputBufferLeavesTheCacheAlone) {
  CacheGraph g;
  g.b.output(g.updated);
  auto executable = compile_cpu(g.b.graph);
  HostTensor cache = cache_tensor();
  HostTensor out = HostTensor::zeros(DType::F32, {kRows, kWidth});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 1));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, 9.0f));
  executable->run({cache.ref(), index.ref(), row.ref()}, {out.ref()}, {});
  EXPECT_EQ(out.values<float>(), updated(1, 9.0f));
  EXPECT_EQ(cache.values<float>(), cache_tensor().values<float>());
  EXPECT_EQ(executable->last_run_stats().bytes_copied, kCacheBytes + kRowBytes);  // the copy, then the row
}

TEST(CpuInPlace, OldValueReturnedTakesTheCopyPath) {
  CacheGraph g;
  g.b.output(g.updated);
  g.b.output(g.cache);  // the cache as it was
  auto executable = compile_cpu(g.b.graph);
  EXPECT_TRUE(runtime::cpu::in_place_scatters(program_of(*executable)).empty());
  HostTensor cache = cache_tensor();
  HostTensor old_cache = HostTensor::zeros(DType::F32, {kRows, kWidth});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 4));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, -3.0f));
  executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), old_cache.ref()}, {});
  EXPECT_EQ(cache.values<float>(), updated(4, -3.0f));
  EXPECT_EQ(old_cache.values<float>(), cache_tensor().values<float>());
  EXPECT_GE(executable->last_run_stats().bytes_copied, kCacheBytes);
}

TEST(CpuInPlace, OldValueReadByALaterStepTakesTheCopyPath) {
  CacheGraph g;
  g.b.output(g.updated);
  // Old + new, which can only run after the Scatter: its read of the old cache comes later.
  g.b.output(g.b.reduce(Op::SumReduce, g.b.binary(Op::Add, g.cache, g.updated), 0));
  auto executable = compile_cpu(g.b.graph);
  EXPECT_TRUE(runtime::cpu::in_place_scatters(program_of(*executable)).empty());
  HostTensor cache = cache_tensor();
  HostTensor sums = HostTensor::zeros(DType::F32, {1, kWidth});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 0));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, 100.0f));
  executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), sums.ref()}, {});
  EXPECT_EQ(cache.values<float>(), updated(0, 100.0f));
  std::vector<float> expected = column_sums(cache_tensor().values<float>());
  const std::vector<float> new_sums = column_sums(updated(0, 100.0f));
  for (int64_t c = 0; c < kWidth; ++c) expected[c] += new_sums[c];
  EXPECT_EQ(sums.values<float>(), expected);
  EXPECT_GE(executable->last_run_stats().bytes_copied, kCacheBytes);
}

TEST(CpuInPlace, AnotherInputSharingTheCacheMemoryTakesTheCopyPath) {
  CacheGraph g;
  auto alias = g.b.input("alias", DType::F32, {kRows, kWidth});
  g.b.output(g.updated);
  g.b.output(g.b.reduce(Op::SumReduce, alias, 0));
  auto executable = compile_cpu(g.b.graph);
  HostTensor cache = cache_tensor();
  HostTensor sums = HostTensor::zeros(DType::F32, {1, kWidth});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 5));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, 50.0f));
  // `alias` is the cache's own memory: whatever the step order, it must read the old rows.
  executable->run({cache.ref(), index.ref(), row.ref(), cache.ref()}, {cache.ref(), sums.ref()}, {});
  EXPECT_EQ(cache.values<float>(), updated(5, 50.0f));
  EXPECT_EQ(sums.values<float>(), column_sums(cache_tensor().values<float>()));
  EXPECT_GE(executable->last_run_stats().bytes_copied, kCacheBytes);
}

// The runtime keeps each weight's span from its binding: rebinding a weight onto the cache's
// memory must make the next call take the copy path, as binding it there first would.
TEST(CpuInPlace, AWeightReboundOntoTheCacheMemoryTakesTheCopyPath) {
  CacheGraph g;
  auto weight = g.b.weight("w", DType::F32, {kRows, kWidth});
  g.b.output(g.updated);
  g.b.output(g.b.reduce(Op::SumReduce, weight, 0));
  HostTensor elsewhere = cache_tensor();
  auto executable = compile_cpu(g.b.graph, {{"w", elsewhere.ref()}});
  HostTensor cache = cache_tensor();
  HostTensor sums = HostTensor::zeros(DType::F32, {1, kWidth});
  HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, 4));
  HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, 40.0f));
  executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), sums.ref()}, {});
  EXPECT_EQ(executable->last_run_stats().bytes_copied, kRowBytes);  // in place
  const HostTensor fresh = cache_tensor();
  std::copy(fresh.bytes.begin(), fresh.bytes.end(), cache.bytes.begin());
  executable->rebind_weight("w", cache.ref());
  executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), sums.ref()}, {});
  EXPECT_EQ(cache.values<float>(), updated(4, 40.0f));
  EXPECT_EQ(sums.values<float>(), column_sums(cache_tensor().values<float>()));  // the old rows
  EXPECT_GE(executable->last_run_stats().bytes_copied, kCacheBytes);
}

TEST(CpuInPlace, ConcurrentDecodeStepsOnSeparateCaches) {
  CacheGraph g;
  g.b.output(g.updated);
  g.b.output(g.b.reduce(Op::SumReduce, g.updated, 0));
  auto executable = compile_cpu(g.b.graph);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      HostTensor cache = cache_tensor();
      HostTensor sums = HostTensor::zeros(DType::F32, {1, kWidth});
      for (int64_t position = 0; position < kRows; ++position) {
        HostTensor index = HostTensor::of<int64_t>(DType::I64, {1, kWidth}, std::vector<int64_t>(kWidth, position));
        HostTensor row = HostTensor::of<float>(DType::F32, {1, kWidth}, std::vector<float>(kWidth, float(t)));
        executable->run({cache.ref(), index.ref(), row.ref()}, {cache.ref(), sums.ref()}, {});
      }
      EXPECT_EQ(cache.values<float>(), std::vector<float>(kRows * kWidth, float(t)));
      EXPECT_EQ(sums.values<float>(), std::vector<float>(kWidth, float(t * kRows)));
    });
  for (auto& thread : threads) thread.join();
}

}  // namespace
}  // namespace luminal::testing
