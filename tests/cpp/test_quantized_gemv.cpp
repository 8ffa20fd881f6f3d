// Weight-only int8 Linears at decode time (passes/quantized_weights.h): the GEMV reads the int8
// weight and widens it in registers instead of a Cast making a float copy per call. Checked
// against the reference runtime, which runs the Cast and an f32/bf16 matmul, over odd sizes,
// the whole int8 range, a batch broadcast, bf16 activations and every GEMV tile.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.h"
#include "runtime/cpu/build_program.h"

namespace luminal::testing {
namespace {

HostTensor int8_weight(int64_t rows, int64_t cols, std::mt19937& rng) {
  HostTensor t = HostTensor::zeros(DType::I8, {rows, cols});
  std::uniform_int_distribution<int> full(-128, 127);
  for (auto& byte : t.bytes) byte = static_cast<std::byte>(static_cast<int8_t>(full(rng)));
  return t;
}

// x [batch.., 1, K] times torchao's dequantized Linear weight: Cast(w [N, K] int8)^T, then the
// per-row scale on the product.
ir::Graph quantized_linear(DType t, int64_t n, int64_t k, int64_t batch) {
  IrTestBuilder b;
  auto x = b.input("x", t, batch > 1 ? ir::Shape{batch, 1, k} : ir::Shape{1, k});
  auto w = b.weight("w", DType::I8, {n, k});
  auto scale = b.weight("scale", t, {n});
  ir::View transposed = w.view.permute({1, 0});  // [K, N]
  if (batch > 1) transposed = transposed.unsqueeze(0).expand({batch, k, n});
  auto product = b.matmul(x, b.unary(Op::Cast, viewed(w, transposed), t));
  ir::View scale_view = scale.view;
  for (size_t d = 1; d < product.view.rank(); ++d) scale_view = scale_view.unsqueeze(0);
  b.output(b.binary(Op::Mul, product, viewed(scale, scale_view.expand(product.view.shape()))));
  return b.graph;
}

const runtime::cpu::Step* gemv_step(const runtime::cpu::Program& program) {
  for (const runtime::cpu::Step& step : program.steps)
    if (step.what.find("gemv") != std::string::npos) return &step;
  return nullptr;
}

TEST(QuantizedGemv, ReadsTheInt8WeightAndMatchesTheReference) {
  std::mt19937 rng(5);
  for (DType t : {DType::F32, DType::BF16}) {
    for (auto [n, k, batch] : {std::tuple<int64_t, int64_t, int64_t>{13, 37, 1}, {64, 256, 1}, {37, 70, 3}}) {
      const ir::Graph graph = quantized_linear(t, n, k, batch);
      HostTensor w = int8_weight(n, k, rng);
      HostTensor scale = random_tensor(t, {n}, rng, /*positive=*/true);
      const std::map<std::string, runtime::BufferRef> weights = {{"w", w.ref()}, {"scale", scale.ref()}};
      const std::string what = std::string(ir::dtype_name(t)) + " " + std::to_string(n) + "x" + std::to_string(k) +
                               " batch " + std::to_string(batch);
      runtime::CompileOptions options;
      options.cache_dir = test_cache_dir();
      const runtime::cpu::Program program = runtime::cpu::build_program(graph, options);
      // One GEMV reading the int8 weight, and no kernel widening the weight first.
      const runtime::cpu::Step* gemv = gemv_step(program);
      ASSERT_NE(gemv, nullptr) << what;
      EXPECT_EQ(program.graph.node(program.slots[gemv->slots[1]].node).dtype, DType::I8) << what;
      for (const runtime::cpu::Step& step : program.steps)
        EXPECT_EQ(step.what.find("Cast"), std::string::npos) << what << ": " << step.what;
      expect_matches_reference(graph, {random_tensor(t, batch > 1 ? std::vector<int64_t>{batch, 1, k}
                                                                   : std::vector<int64_t>{1, k},
                                                     rng)},
                               what, t == DType::F32 ? 1e-4 : 2e-2, weights);
    }
  }
}

TEST(QuantizedGemv, APrefillKeepsTheCastAndBlas) {
  // M > 1: no GEMV, so the weight is widened for BLAS as before.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {5, 24});
  auto w = b.weight("w", DType::I8, {16, 24});
  b.output(b.matmul(x, b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), DType::F32)));
  std::mt19937 rng(6);
  HostTensor weight = int8_weight(16, 24, rng);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {5, 24}, rng)}, "prefill", 1e-4,
                           {{"w", weight.ref()}});
}

}  // namespace
}  // namespace luminal::testing
