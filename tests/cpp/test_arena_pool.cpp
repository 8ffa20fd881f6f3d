// The process's pool of CPU arenas: a call reuses the largest free arena, concurrent calls get
// distinct ones, the pool lives while an executable holds it, and executables of different
// graphs called one after another share one arena (a training step's forward and backward).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cpu_test_util.h"
#include "runtime/cpu/arena_pool.h"

namespace luminal::testing {
namespace {

using runtime::cpu::ArenaPool;

TEST(ArenaPool, ACallReusesTheLargestFreeArena) {
  std::shared_ptr<ArenaPool> pool = ArenaPool::shared();
  const std::byte* big = nullptr;
  {
    ArenaPool::Lease lease = pool->take(1 << 20);
    big = lease.arena().data;
    EXPECT_GE(lease.arena().capacity, size_t{1} << 20);
  }
  {
    ArenaPool::Lease small = pool->take(100);
    EXPECT_EQ(small.arena().data, big) << "a small call took a new arena while a big one was free";
    ArenaPool::Lease concurrent = pool->take(100);
    EXPECT_NE(concurrent.arena().data, small.arena().data) << "two calls in flight share an arena";
  }
  EXPECT_EQ(pool->free_capacities().size(), 2u);
}

TEST(ArenaPool, ThePoolIsFreedWithItsLastHolder) {
  std::weak_ptr<ArenaPool> weak;
  {
    std::shared_ptr<ArenaPool> pool = ArenaPool::shared();
    EXPECT_EQ(ArenaPool::shared(), pool);
    pool->take(1 << 20);
    weak = pool;
  }
  EXPECT_TRUE(weak.expired()) << "the arenas outlived every executable";
}

TEST(ArenaPool, ExecutablesOfDifferentGraphsShareOneArena) {
  // Two graphs whose matmul results are intermediates in the arena, of different sizes.
  const auto graph = [](int64_t rows) {
    IrTestBuilder b;
    auto x = b.input("x", DType::F32, {rows, 64});
    auto w = b.input("w", DType::F32, {64, 64});
    b.output(b.unary(Op::Exp, b.matmul(b.matmul(x, w), w)));
    return b.graph;
  };
  const ir::Graph small = graph(16), large = graph(512);
  auto small_exe = compile_cpu(small);
  auto large_exe = compile_cpu(large);
  std::mt19937 rng(7);
  std::vector<HostTensor> small_inputs = {random_tensor(DType::F32, {16, 64}, rng),
                                          random_tensor(DType::F32, {64, 64}, rng)};
  std::vector<HostTensor> large_inputs = {random_tensor(DType::F32, {512, 64}, rng),
                                          random_tensor(DType::F32, {64, 64}, rng)};
  for (int round = 0; round < 3; ++round) {  // forward, backward, forward, ...
    run_executable(*large_exe, large, large_inputs);
    run_executable(*small_exe, small, small_inputs);
  }
  const std::vector<size_t> free = ArenaPool::shared()->free_capacities();
  ASSERT_EQ(free.size(), 1u) << "each executable kept an arena of its own";
  EXPECT_GE(free[0], size_t{512} * 64 * sizeof(float));
}

}  // namespace
}  // namespace luminal::testing
