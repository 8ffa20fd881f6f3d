// SharedMemoryGroup between two forked processes: reductions and gathers equal to the values
// computed here, calls overlapping as the runtime issues them, and a peer that exits mid-call
// is an error within moments, never a hang.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/shared_memory_group.h"

namespace luminal::runtime {
namespace {

using Combine = SharedMemoryGroup::Combine;

std::string segment_name() { return "/luminal-test-" + std::to_string(getpid()); }

// rank r contributes value(r, i) at element i of call k.
float value(int rank, int call, int i) { return static_cast<float>(rank * 1000 + call * 10 + i % 7) * 0.5f; }

// Runs calls 0..calls-1 as the runtime would: two issued before the first is waited for.
std::vector<std::vector<float>> run_calls(SharedMemoryGroup& group, int calls, size_t count) {
  std::vector<std::vector<float>> outputs(static_cast<size_t>(calls), std::vector<float>(count));
  std::vector<uint64_t> ids;
  for (int k = 0; k < calls; ++k) {
    ids.push_back(group.start(count * sizeof(float), ir::DType::F32, k % 2 ? Combine::Max : Combine::Sum,
                              outputs[static_cast<size_t>(k)].data(), [&](void* slot) {
                                auto* out = static_cast<float*>(slot);
                                for (size_t i = 0; i < count; ++i) out[i] = value(group.rank(), k, static_cast<int>(i));
                              }));
    if (k >= 1) group.complete(ids[static_cast<size_t>(k - 1)]);
  }
  group.complete(ids.back());
  return outputs;
}

TEST(SharedMemoryGroup, TwoProcessesReduceAndAgree) {
  const std::string name = segment_name();
  auto group = SharedMemoryGroup::map(name, true, 0, 2, std::chrono::seconds(20), "test");
  ASSERT_NE(group, nullptr);
  const int calls = 200;
  const size_t count = 1000;
  const pid_t child = fork();
  if (child == 0) {
    auto peer = SharedMemoryGroup::map(name, false, 1, 2, std::chrono::seconds(20), "test");
    if (!peer) _exit(2);
    const auto outputs = run_calls(*peer, calls, count);
    for (int k = 0; k < calls; ++k)
      for (size_t i = 0; i < count; ++i) {
        const float a = value(0, k, static_cast<int>(i)), b = value(1, k, static_cast<int>(i));
        if (outputs[static_cast<size_t>(k)][i] != (k % 2 ? std::max(a, b) : a + b)) _exit(3);
      }
    _exit(0);
  }
  const auto outputs = run_calls(*group, calls, count);
  group->unlink_name();
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int k = 0; k < calls; ++k)
    for (size_t i = 0; i < count; ++i) {
      const float a = value(0, k, static_cast<int>(i)), b = value(1, k, static_cast<int>(i));
      ASSERT_EQ(outputs[static_cast<size_t>(k)][i], k % 2 ? std::max(a, b) : a + b) << "call " << k << " element " << i;
    }
}

TEST(SharedMemoryGroup, GatherConcatenatesInRankOrder) {
  const std::string name = segment_name() + "-gather";
  auto group = SharedMemoryGroup::map(name, true, 0, 2, std::chrono::seconds(20), "test");
  ASSERT_NE(group, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    auto peer = SharedMemoryGroup::map(name, false, 1, 2, std::chrono::seconds(20), "test");
    int64_t out[6];
    const uint64_t call = peer->start(3 * sizeof(int64_t), ir::DType::I64, Combine::Gather, out, [](void* slot) {
      for (int i = 0; i < 3; ++i) static_cast<int64_t*>(slot)[i] = 10 + i;
    });
    peer->complete(call);
    _exit(out[0] == 0 && out[3] == 10 && out[5] == 12 ? 0 : 1);
  }
  int64_t out[6];
  const uint64_t call = group->start(3 * sizeof(int64_t), ir::DType::I64, Combine::Gather, out, [](void* slot) {
    for (int i = 0; i < 3; ++i) static_cast<int64_t*>(slot)[i] = i;
  });
  group->complete(call);
  group->unlink_name();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(std::vector<int64_t>(out, out + 6), (std::vector<int64_t>{0, 1, 2, 10, 11, 12}));
}

TEST(SharedMemoryGroup, APeerThatExitsIsAnErrorNotAHang) {
  const std::string name = segment_name() + "-exit";
  auto group = SharedMemoryGroup::map(name, true, 0, 2, std::chrono::seconds(60), "test");
  ASSERT_NE(group, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    auto peer = SharedMemoryGroup::map(name, false, 1, 2, std::chrono::seconds(60), "test");
    _exit(peer ? 0 : 1);  // maps the segment, then leaves without a collective
  }
  int status = 0;
  waitpid(child, &status, 0);
  group->unlink_name();
  float in = 1, out = 0;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t call = group->start(sizeof(float), ir::DType::F32, Combine::Sum, &out,
                                     [&](void* slot) { *static_cast<float*>(slot) = in; });
  EXPECT_THROW(
      {
        try {
          group->complete(call);
        } catch (const UserError& e) {
          EXPECT_NE(std::string(e.what()).find("exited"), std::string::npos) << e.what();
          throw;
        }
      },
      UserError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace luminal::runtime
