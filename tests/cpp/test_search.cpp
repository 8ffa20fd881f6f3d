// The schedule search (search_iterations): the choice logic against scripted timings, its disk
// entries, and searched executables: the same results as the heuristic's, the caller's buffers
// written once, the choices read back from the cache by a second executable.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cpu_test_util.h"
#include "runtime/cpu/search.h"

namespace luminal::testing {
namespace {

using runtime::cpu::SearchSpace;
using runtime::cpu::StepChoice;
using runtime::cpu::TimedCall;

// Step times by configuration: step 0 is faster on the pool, step 1 serial (both heuristically
// the other way), step 2 a matmul faster through ATen, step 3 has no alternative, step 4 is a
// kernel whose second tile variant is the fastest (its first is slower than the default) and
// step 5 one whose variants are no faster.
TimedCall scripted(const std::vector<StepChoice>& c) {
  TimedCall t;
  t.step_us = {c[0].parallel ? 100.0 : 400.0,
               c[1].parallel ? 300.0 : 50.0,
               c[2].matmul_through_aten ? 500.0 : 900.0,
               10.0,
               c[4].variant == 1 ? 120.0 : c[4].variant == 0 ? 260.0 : 200.0,
               c[5].variant == -1 ? 80.0 : 79.0};
  for (double us : t.step_us) t.total_us += us;
  return t;
}

std::vector<StepChoice> heuristic() {
  std::vector<StepChoice> choices(6);
  choices[1].parallel = true;
  return choices;
}
// `scripted`, counting its calls in `calls`.
runtime::cpu::TimeCall counting_calls(int& calls) {
  return [&calls](const std::vector<StepChoice>& c) {
    ++calls;
    return scripted(c);
  };
}

SearchSpace space() {
  return {{true, true, false, false, false, false}, {false, false, true, false, false, false}, {0, 0, 0, 0, 2, 2}};
}

TEST(ScheduleSearch, KeepsEachStepsFasterOption) {
  std::string log;
  int calls = 0;
  const runtime::cpu::TimeCall counted = counting_calls(calls);
  const std::vector<StepChoice> chosen = runtime::cpu::search_schedule(heuristic(), space(), 64, counted, log);
  EXPECT_TRUE(chosen[0].parallel);
  EXPECT_FALSE(chosen[1].parallel);
  EXPECT_TRUE(chosen[2].matmul_through_aten);
  EXPECT_FALSE(chosen[3].parallel || chosen[3].matmul_through_aten);
  EXPECT_EQ(chosen[4].variant, 1) << log;
  EXPECT_EQ(chosen[5].variant, -1) << "1 us faster is noise, not a reason to switch\n" << log;
  EXPECT_LE(calls, 64) << log;
  EXPECT_NE(log.find("step 2: matmul through ATen 500 us, OpenBLAS 900 us"), std::string::npos) << log;
  EXPECT_NE(log.find("step 4: variant 1 120 us, was 200 us"), std::string::npos) << log;
}

TEST(ScheduleSearch, TooFewCallsKeepsTheHeuristic) {
  std::string log;
  int calls = 0;
  const runtime::cpu::TimeCall counted = counting_calls(calls);
  const std::vector<StepChoice> chosen = runtime::cpu::search_schedule(heuristic(), space(), 10, counted, log);
  EXPECT_TRUE(chosen[1].parallel);
  EXPECT_EQ(calls, 0);
  EXPECT_NE(log.find("too few"), std::string::npos) << log;
}

// `scripted`, but steps 0 and 1 both taking their faster option costs whole calls more than it
// saves (steps that share the pool's workers).
TimedCall mixed_splits_cost_more(const std::vector<StepChoice>& c) {
  TimedCall t = scripted(c);
  if (c[0].parallel && !c[1].parallel) t.total_us += 10000;
  return t;
}

// Each step is faster the other way when timed in its own configuration, but the mixed schedule
// is slower as a whole (steps that share the pool's workers): the thread splits stay heuristic,
// and the kinds of choice that were faster on their own (matmul library, tile) are kept.
TEST(ScheduleSearch, WholeCallsMustNotGetSlower) {
  std::string log;
  const std::vector<StepChoice> chosen = runtime::cpu::search_schedule(heuristic(), space(), 64, mixed_splits_cost_more, log);
  EXPECT_FALSE(chosen[0].parallel) << log;
  EXPECT_TRUE(chosen[1].parallel) << log;
  EXPECT_TRUE(chosen[2].matmul_through_aten) << log;
  EXPECT_EQ(chosen[4].variant, 1) << log;
  EXPECT_NE(log.find("search: keeps the kinds faster alone"), std::string::npos) << log;
}

// Only the thread splits could change, and they make whole calls slower: the heuristic stays.
TEST(ScheduleSearch, SlowerChoicesKeepTheHeuristic) {
  const SearchSpace splits_only{{true, true, false, false, false, false}, std::vector<bool>(6, false),
                                std::vector<int>(6, 0)};
  std::string log;
  const std::vector<StepChoice> chosen = runtime::cpu::search_schedule(heuristic(), splits_only, 64, mixed_splits_cost_more, log);
  EXPECT_FALSE(chosen[0].parallel) << log;
  EXPECT_TRUE(chosen[1].parallel) << log;
  EXPECT_NE(log.find("search: keeps the heuristic"), std::string::npos) << log;
}

TEST(ScheduleSearch, EntriesRoundTripAndDamagedOnesAreIgnored) {
  const std::string path = (std::filesystem::temp_directory_path() / "luminal-search-test" / "entry.txt").string();
  const std::vector<StepChoice> stored = {{true, false, -1}, {false, true, -1}, {false, false, 1}};
  const SearchSpace three{{true, false, true}, {false, true, false}, {0, 0, 2}};
  runtime::cpu::store_choices(path, stored);
  std::vector<StepChoice> loaded;
  ASSERT_TRUE(runtime::cpu::load_choices(path, three, loaded));
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(loaded[s].parallel, stored[s].parallel);
    EXPECT_EQ(loaded[s].matmul_through_aten, stored[s].matmul_through_aten);
    EXPECT_EQ(loaded[s].variant, stored[s].variant);
  }
  const SearchSpace four{{true, false, true, true}, {false, true, false, false}, {0, 0, 2, 0}};
  EXPECT_FALSE(runtime::cpu::load_choices(path, four, loaded));  // another program's step count
  const SearchSpace fewer_variants{{true, false, true}, {false, true, false}, {0, 0, 1}};
  EXPECT_FALSE(runtime::cpu::load_choices(path, fewer_variants, loaded));  // a variant the step lacks
  const SearchSpace two{{true, true}, {false, false}, {0, 0}};
  std::ofstream(path) << "1 0 -1\nx\n";
  EXPECT_FALSE(runtime::cpu::load_choices(path, two, loaded));
  std::ofstream(path) << "1 0 -1\n0 0 -1 7\n";
  EXPECT_FALSE(runtime::cpu::load_choices(path, two, loaded));
  std::ofstream(path) << "1 0\n0 0\n";  // the format before tile variants
  EXPECT_FALSE(runtime::cpu::load_choices(path, two, loaded));
  EXPECT_FALSE(runtime::cpu::load_choices(path + ".missing", two, loaded));
}

// A softmax big enough to split, plus an accumulating scatter into the caller's buffer, searched:
// the results equal the reference's, the caller's buffer receives exactly one update however
// many calls the search timed, and a second executable reads the choices back from the cache.
TEST(ScheduleSearch, SearchedExecutableMatchesAndWritesTheCallerOnce) {
  const std::string cache = (std::filesystem::temp_directory_path() / "luminal-search-cache").string();
  std::filesystem::remove_all(cache);
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {64, 1024});
  auto e = b.unary(Op::Exp, x);
  b.output(b.binary(Op::Div, e, viewed(b.reduce(Op::SumReduce, e, 1), ir::View({64, 1024}, {1, 0}, 0))));
  auto counts = b.input("counts", DType::F32, {4});
  auto index = b.input("index", DType::I64, {3});
  auto ones = b.constant(1.0, DType::F32, {3});
  b.output(b.scatter(counts, index, ones, 0, true));
  std::mt19937 rng(3);
  const HostTensor input = random_tensor(DType::F32, {64, 1024}, rng);
  const HostTensor indices = HostTensor::of<int64_t>(DType::I64, {3}, {1, 1, 3});
  std::vector<HostTensor> reference_inputs = {input, HostTensor::zeros(DType::F32, {4}), indices};
  const auto expected = run_executable(*compile_reference(b.graph), b.graph, reference_inputs);

  runtime::CompileOptions options;
  options.search_iterations = 40;
  options.cache_dir = cache;
  options.debug_dir = cache + "/debug";
  for (int process = 0; process < 2; ++process) {
    auto executable = compile_cpu(b.graph, {}, options);
    HostTensor counts_buffer = HostTensor::zeros(DType::F32, {4});
    HostTensor out = HostTensor::zeros(DType::F32, {64, 1024});
    HostTensor x_copy = input, index_copy = indices;
    executable->run({x_copy.ref(), counts_buffer.ref(), index_copy.ref()}, {out.ref(), counts_buffer.ref()}, {});
    expect_same(out, expected[0], 1e-6, "softmax after the search");
    EXPECT_EQ(counts_buffer.values<float>(), (std::vector<float>{0, 2, 0, 1})) << "the caller's buffer updated once";
  }
  std::ifstream log_file(cache + "/debug/search_log.txt");
  const std::string log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("search: heuristic"), std::string::npos) << log;
  EXPECT_NE(log.find("search: choices from"), std::string::npos) << log;  // the second executable's
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache + "/search"), {}), 1);
}

// A cache written at the position a counter holds, the counter advanced: both updated in the
// caller's buffers (outputs passed as the inputs themselves). Every call the search times must
// start from the caller's values; a counter advanced by the earlier timed calls would write past
// the cache (the bench found this on a StaticCache prefill).
TEST(ScheduleSearch, TimedCallsStartFromTheCallersState) {
  const std::string cache = (std::filesystem::temp_directory_path() / "luminal-search-state").string();
  std::filesystem::remove_all(cache);
  IrTestBuilder b;
  auto rows = b.input("rows", DType::F32, {4, 2});
  auto counter = b.input("counter", DType::I64, {1});
  auto index = viewed(counter, ir::View({1, 2}, {0, 0}, 0));
  b.output(b.scatter(rows, index, b.constant(7.0, DType::F32, {1, 2}), 0, false));
  b.output(b.binary(Op::Add, counter, b.constant(ir::Scalar::of_int(1), DType::I64, {1})));
  auto wide = b.input("wide", DType::F32, {64, 1024});  // a kernel worth splitting: the search runs
  b.output(b.unary(Op::Exp, wide));
  runtime::CompileOptions options;
  options.search_iterations = 40;
  options.cache_dir = cache;
  options.debug_dir = cache + "/debug";
  auto executable = compile_cpu(b.graph, {}, options);
  HostTensor state = HostTensor::zeros(DType::F32, {4, 2});
  HostTensor position = HostTensor::of<int64_t>(DType::I64, {1}, {3});
  HostTensor input = HostTensor::zeros(DType::F32, {64, 1024}), exp = HostTensor::zeros(DType::F32, {64, 1024});
  executable->run({state.ref(), position.ref(), input.ref()}, {state.ref(), position.ref(), exp.ref()}, {});
  std::ifstream log(cache + "/debug/search_log.txt");
  EXPECT_NE(std::string(std::istreambuf_iterator<char>(log), {}).find("search: heuristic"), std::string::npos);
  EXPECT_EQ(state.values<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 7, 7}));
  EXPECT_EQ(position.values<int64_t>(), std::vector<int64_t>{4});
}

}  // namespace
}  // namespace luminal::testing
