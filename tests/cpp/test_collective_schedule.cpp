// Collective steps in the cpu runtime, with a stand-in executor that completes an all_reduce of
// two identical ranks (the input doubled) only when waited for, and scribbles NaN into the
// result until then: a step reading the result before its wait, or an input freed before it,
// shows up in the values. The schedule itself is read from the debug dump.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cpu_test_util.h"
#include "runtime/collectives.h"

namespace luminal::testing {
namespace {

class DoublingExecutor final : public runtime::CollectiveExecutor {
 public:
  struct InFlight final : runtime::InFlightCollective {
    runtime::BufferRef input, output;
    void wait() override {
      const auto* in = static_cast<const float*>(input.data);
      auto* out = static_cast<float*>(output.data);
      // The input is read now, at the wait: it must still hold the contribution.
      int64_t count = 1;
      for (int64_t d : output.sizes) count *= d;
      for (int64_t i = 0; i < count; ++i) out[i] = 2 * in[i * (input.strides.empty() ? 1 : input.strides.back())];
    }
  };
  std::unique_ptr<runtime::InFlightCollective> start(const ir::Collective&, const runtime::BufferRef& input,
                                                     const runtime::BufferRef& output,
                                                     const ir::SymbolBindings&) const override {
    int64_t count = 1;
    for (int64_t d : output.sizes) count *= d;
    for (int64_t i = 0; i < count; ++i) static_cast<float*>(output.data)[i] = std::numeric_limits<float>::quiet_NaN();
    auto flight = std::make_unique<InFlight>();
    flight->input = input;
    flight->output = output;
    return flight;
  }
  int64_t group_size(const std::string&) const override { return 2; }
};

struct WithExecutor {
  DoublingExecutor executor;
  WithExecutor() { runtime::set_collective_executor(&executor); }
  ~WithExecutor() { runtime::set_collective_executor(nullptr); }
};

TensorRef all_reduce(IrTestBuilder& b, const TensorRef& x) {
  ir::Node node = IrTestBuilder::make(Op::Collective, DType::F32, x.view.shape(), {x});
  auto c = std::make_shared<ir::Collective>();
  c->kind = ir::Collective::Kind::AllReduce;
  c->reduce_op = "sum";
  c->group_name = "0";
  c->op = "_c10d_functional::all_reduce";
  node.collective = std::move(c);
  return b.add(std::move(node));
}

TEST(CollectiveSchedule, IndependentComputeRunsWhileTheCollectiveIsInFlight) {
  WithExecutor installed;
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 8});
  auto w = b.input("w", DType::F32, {4, 8});
  auto v = b.input("v", DType::F32, {8, 8});
  auto scaled = b.binary(Op::Mul, x, b.constant(ir::Scalar::of_float(3.0), DType::F32, {4, 8}));
  auto reduced = all_reduce(b, scaled);
  // Reads nothing the collective writes. A GEMM: elementwise work would fuse into the kernel
  // that reads the collective's result, after the wait.
  auto independent = b.matmul(w, v);
  b.output(b.binary(Op::Add, reduced, independent));

  std::mt19937 rng(1);
  std::vector<HostTensor> inputs = {random_tensor(DType::F32, {4, 8}, rng), random_tensor(DType::F32, {4, 8}, rng),
                                    random_tensor(DType::F32, {8, 8}, rng)};
  const std::filesystem::path debug = std::filesystem::temp_directory_path() / "luminal-collective-schedule";
  std::filesystem::remove_all(debug);
  std::filesystem::create_directories(debug);
  runtime::CompileOptions options;
  options.debug_dir = debug.string();
  const auto cpu = compile_cpu(b.graph, {}, options);
  std::vector<HostTensor> cpu_inputs = inputs;
  const std::vector<HostTensor> actual = run_executable(*cpu, b.graph, cpu_inputs);
  const std::vector<HostTensor> expected = run_reference(b.graph, inputs);
  for (size_t i = 0; i < 32; ++i) {
    double product = 0;
    for (size_t k = 0; k < 8; ++k)
      product += element_as_double(inputs[1], i / 8 * 8 + k) * element_as_double(inputs[2], k * 8 + i % 8);
    const double want = 6 * element_as_double(inputs[0], i) + product;
    ASSERT_NEAR(element_as_double(actual[0], i), want, 1e-5) << "element " << i;
    ASSERT_NEAR(element_as_double(expected[0], i), want, 1e-5) << "reference, element " << i;
  }

  // The GEMM runs between the collective's start and its wait.
  std::ifstream stats(debug / "cpu_stats.txt");
  std::vector<std::string> steps;
  for (std::string line; std::getline(stats, line);)
    if (line.find(" from ") != std::string::npos) steps.push_back(line);
  int start = -1, wait = -1, gemm = -1;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    if (steps[i].rfind("collective start", 0) == 0) start = i;
    if (steps[i].rfind("collective wait", 0) == 0) wait = i;
    // A BLAS step or, since the product has few rows, the column GEMV kernel: the Matmul's step.
    if (steps[i].find("from test::Matmul") != std::string::npos) gemm = i;
  }
  std::ostringstream all;
  for (const auto& s : steps) all << s << "\n";
  EXPECT_TRUE(start >= 0 && start < gemm && gemm < wait) << all.str();
}

TEST(CollectiveSchedule, AResultOnlyTheCallerReadsIsWaitedForBeforeTheCallReturns) {
  WithExecutor installed;
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {3, 5});
  b.output(all_reduce(b, b.unary(Op::Neg, x)));
  std::mt19937 rng(2);
  std::vector<HostTensor> inputs = {random_tensor(DType::F32, {3, 5}, rng)};
  const auto actual = run_executable(*compile_cpu(b.graph), b.graph, inputs);
  for (size_t i = 0; i < 15; ++i)
    ASSERT_FLOAT_EQ(static_cast<float>(element_as_double(actual[0], i)),
                    static_cast<float>(-2 * element_as_double(inputs[0], i)));
}

TEST(CollectiveSchedule, WithoutAnExecutorACollectiveIsUnsupported) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2});
  b.output(all_reduce(b, x));
  EXPECT_THROW(compile_cpu(b.graph), UnsupportedError);
}

}  // namespace
}  // namespace luminal::testing
