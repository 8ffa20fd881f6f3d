// Fusion: legality decisions, the kernels fusion produces for the patterns that matter
// (elementwise chains, softmax, rms_norm, GEMV epilogues), the generated source's shape, and
// the disk cache across processes.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "codegen/cpp/emit.h"
#include "codegen/lower.h"
#include "common/error.h"
#include "cpu_test_util.h"
#include "passes/fusion/fuse.h"
#include "passes/fusion/legal.h"
#include "passes/legalize_matmul.h"
#include "passes/quantized_weights.h"
#include "runtime/cpu/build_program.h"
#include "runtime/cpu/cpu_executable.h"
#include "runtime/cpu/fusion_search.h"
#include "runtime/cpu/jit.h"

extern char** environ;

namespace luminal::testing {
namespace {

using ir::Expr;

const runtime::cpu::Program& program_of(const runtime::Executable& e) {
  return dynamic_cast<const runtime::cpu::CpuExecutable&>(e).program();
}

// The most rows of an f32 Linear of depth `depth` the cpu runtime's strips GEMV takes with kernels
// for `isa` here (kF32GemvRows, or more where they outrun BLAS: runtime/cpu/build_program.h).
int64_t f32_strip_rows(runtime::cpu::CpuIsa isa, int64_t depth) {
  return runtime::cpu::cpu_gemv_rows(isa, {}).f32_rows(depth);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string only_kernel_source(const ir::Graph& graph) {
  passes::PassContext cx;
  const passes::Partition p = passes::fuse(graph, cx);
  std::string source;
  int kernels = 0;
  for (int g : passes::topological_groups(p)) {
    const passes::Group& group = p.groups[g];
    if (group.kind != passes::GroupKind::Pointwise && group.kind != passes::GroupKind::Row) continue;
    ++kernels;
    source = codegen::cpp::emit_kernel(
        codegen::lower_loop_group(graph, group.nodes, group.domain, group.reduce_axis, passes::stored_nodes(graph, p, g)).kernel,
        "k");
  }
  EXPECT_EQ(kernels, 1) << "expected one fused kernel";
  return source;
}

TEST(Fusion, ElementwiseChainIsOneLoop) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {8, 1000});
  auto y = b.input("y", DType::F32, {8, 1000});
  auto s = b.unary(Op::Sigmoid, b.binary(Op::Add, x, y));
  b.output(b.binary(Op::Mul, s, b.unary(Op::Exp, x)));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "for (int64_t i1"), 1u) << source;
  EXPECT_EQ(count(source, "p2["), 1u) << "one store, no intermediate buffers:\n" << source;
  EXPECT_NE(source.find("#pragma omp simd"), std::string::npos) << source;
  std::mt19937 rng(1);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {8, 1000}, rng), random_tensor(DType::F32, {8, 1000}, rng)},
                           "chain", 1e-5);
}

// softmax(x) over the last dim the way the translator writes it.
TensorRef softmax(IrTestBuilder& b, TensorRef x, const ir::Shape& shape) {
  const int axis = static_cast<int>(shape.size()) - 1;
  auto m = b.reduce(Op::MaxReduce, x, axis);
  auto shifted = b.binary(Op::Sub, x, viewed(m, m.view.expand(shape)));
  auto e = b.unary(Op::Exp, shifted);
  auto s = b.reduce(Op::SumReduce, e, axis);
  return b.binary(Op::Div, e, viewed(s, s.view.expand(shape)));
}

TEST(Fusion, SoftmaxIsOneRowKernel) {
  IrTestBuilder b;
  const ir::Shape shape = {6, 333};
  auto x = b.input("x", DType::F32, shape);
  b.output(softmax(b, x, shape));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "for (int64_t i1"), 3u) << "max pass, sum pass, output pass:\n" << source;
  EXPECT_EQ(count(source, "lm_expf("), 1u) << "the sum pass stashes exp in the output:\n" << source;
  std::mt19937 rng(2);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {6, 333}, rng)}, "softmax", 1e-5);
}

TEST(Fusion, SoftmaxPlusItsInputStashesExpOnTheStack) {
  // The output pass also reads x, so stashing exp in an output that may share x's memory could
  // overwrite x before that read: exp goes to a row-sized stack array instead. Past the array's
  // size limit the kernel computes exp again.
  for (int64_t row : {129, 9000}) {
    IrTestBuilder b;
    const ir::Shape shape = {3, row};
    auto x = b.input("x", DType::F32, shape);
    b.output(b.binary(Op::Add, softmax(b, x, shape), x));
    const std::string source = only_kernel_source(b.graph);
    const bool on_stack = row <= 8192;
    EXPECT_EQ(count(source, "lm_expf("), on_stack ? 1u : 2u) << source;
    EXPECT_EQ(count(source, "lm_stash[i1] = "), on_stack ? 1u : 0u) << source;
    std::mt19937 rng(3);
    expect_matches_reference(b.graph, {random_tensor(DType::F32, {3, row}, rng)}, "softmax + x", 1e-5);
  }
}

TEST(Fusion, HalfSoftmaxStashesExpOnTheStack) {
  // A bf16 output would round a stashed f32 exp, so a half-precision softmax keeps it in a
  // stack array: exp once per element, and the result still matches the reference.
  IrTestBuilder b;
  const ir::Shape shape = {4, 300};
  auto x = b.input("x", DType::BF16, shape);
  b.output(b.unary(Op::Cast, softmax(b, b.unary(Op::Cast, x, DType::F32), shape), DType::BF16));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "lm_expf("), 1u) << source;
  EXPECT_EQ(count(source, "lm_stash[i1] = "), 1u) << source;
  std::mt19937 rng(5);
  expect_matches_reference(b.graph, {random_tensor(DType::BF16, {4, 300}, rng)}, "bf16 softmax");
}

// A scalar constant read as `shape`.
TensorRef scalar_of(IrTestBuilder& b, double value, const ir::Shape& shape) {
  auto c = b.constant(value, DType::F32, {});
  return viewed(c, c.view.expand(shape));
}

// softmax(q kᵀ * 0.25 + bias) v as translator/attention.cpp composes it: q [H, L, E] and k
// [H, S, E] (read transposed) f32, v [H, S, Ev], bias [L, S] broadcast over the heads. `scaled`,
// when given, receives the scaled scores.
TensorRef attention_of(IrTestBuilder& b, const TensorRef& q, const TensorRef& k, const TensorRef& v,
                       const TensorRef& bias, TensorRef* scaled_out = nullptr) {
  const ir::Shape& q_shape = q.view.shape();
  const ir::Shape scores_shape = {q_shape[0], q_shape[1], k.view.shape()[1]};
  const ir::Shape row_shape = {q_shape[0], q_shape[1], 1};
  auto product = b.matmul(q, viewed(k, k.view.permute({0, 2, 1})));
  auto scaled = b.binary(Op::Mul, product, scalar_of(b, 0.25, scores_shape));
  if (scaled_out) *scaled_out = scaled;
  auto x = b.binary(Op::Add, scaled, viewed(bias, bias.view.expand(scores_shape)));
  auto max = b.reduce(Op::MaxReduce, x, 2);
  auto shift = b.where(b.binary(Op::Eq, max, scalar_of(b, -INFINITY, row_shape)), scalar_of(b, 0.0, row_shape), max);
  auto exps = b.unary(Op::Exp, b.binary(Op::Sub, x, viewed(shift, shift.view.expand(scores_shape))));
  auto sum = b.reduce(Op::SumReduce, exps, 2);
  auto safe_sum = b.where(b.binary(Op::Eq, sum, scalar_of(b, 0.0, row_shape)), scalar_of(b, 1.0, row_shape), sum);
  auto probabilities = b.binary(Op::Div, exps, viewed(safe_sum, safe_sum.view.expand(scores_shape)));
  return b.matmul(probabilities, v);
}

// The comparison of a causal mask [L, S]: key s <= query l, or with `row_shift` (an i64 [] input)
// s + 0 <= l + row_shift, as transformers compares a StaticCache's slots with the cache positions.
TensorRef causal_comparison(IrTestBuilder& b, int64_t L, int64_t S, const std::optional<TensorRef>& row_shift) {
  TensorRef rows = b.iota(0, DType::I64, {L}), cols = b.iota(0, DType::I64, {S});
  if (row_shift) {
    rows = b.binary(Op::Add, rows, viewed(*row_shift, row_shift->view.expand({L})));
    const TensorRef zero = b.constant(ir::Scalar::of_int(0), DType::I64, {});
    cols = b.binary(Op::Add, cols, viewed(zero, zero.view.expand({S})));
  }
  return b.binary(Op::Le, viewed(cols, cols.view.unsqueeze(0).expand({L, S})),
                  viewed(rows, rows.view.unsqueeze(1).expand({L, S})));
}

// A causal comparison as an additive mask: where(allowed, 0, -inf), the translator's mask_bias.
TensorRef causal_bias_of(IrTestBuilder& b, const TensorRef& allowed) {
  const ir::Shape& shape = allowed.view.shape();
  return b.where(allowed, scalar_of(b, 0.0, shape), scalar_of(b, -INFINITY, shape));
}

// Attention as translator/attention.cpp composes it: q [H, L, E], k [H, S, E] read transposed,
// v [H, S, E], a [L, S] bias broadcast over heads: an input, or with `causal` is_causal's mask
// where(iota_s <= iota_l, 0, -inf). `scores_out` also returns the scaled scores. f16/bf16
// `operands` are cast to f32 first, as the translator computes their attention; `widened_k_out`
// also returns k's cast.
ir::Graph attention_graph(int64_t heads, int64_t L, int64_t S, int64_t E, bool scores_out, DType operands = DType::F32,
                          bool widened_k_out = false, bool bf16_out = false, int64_t cache_slots = 0,
                          bool causal = false) {
  IrTestBuilder b;
  auto widened = [&](const TensorRef& x) { return operands == DType::F32 ? x : b.unary(Op::Cast, x, DType::F32); };
  // With cache_slots, k and v are caches [heads, cache_slots, E] read at slots [1, S + 1).
  auto keys = [&](const char* name) {
    if (cache_slots == 0) return b.input(name, operands, {heads, S, E});
    const TensorRef cache = b.input(name, operands, {heads, cache_slots, E});
    return viewed(cache, cache.view.slice(1, 1, S + 1, 1));
  };
  auto q = widened(b.input("q", operands, {heads, L, E}));
  auto k = widened(keys("k"));
  auto v = widened(keys("v"));
  const TensorRef bias =
      causal ? causal_bias_of(b, causal_comparison(b, L, S, std::nullopt)) : b.input("bias", DType::F32, {L, S});
  TensorRef scaled;
  const TensorRef out = attention_of(b, q, k, v, bias, &scaled);
  b.output(bf16_out ? b.unary(Op::Cast, out, DType::BF16) : out);
  if (scores_out) b.output(scaled);
  if (widened_k_out) b.output(k);
  return b.graph;
}

// A band of 8 keys per query row, with rows 3 and 20 attending nothing.
HostTensor band_bias(int64_t L, int64_t S) {
  std::vector<float> values(static_cast<size_t>(L * S), -INFINITY);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t s = l; s < std::min(S, l + 8); ++s)
      if (l != 3 && l != 20) values[static_cast<size_t>(l * S + s)] = 0.5f * static_cast<float>(s % 3);
  return HostTensor::of<float>(DType::F32, {L, S}, values);
}

// Row l attends keys [l + 13, l + 34): windows that start inside a 16-key strip.
HostTensor window_bias(int64_t L, int64_t S) {
  std::vector<float> values(static_cast<size_t>(L * S), -INFINITY);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t s = l + 13; s < std::min(S, l + 34); ++s) values[static_cast<size_t>(l * S + s)] = 0.25f * (s % 5);
  return HostTensor::of<float>(DType::F32, {L, S}, values);
}

// x [3, 1, 70] @ w.T, w [37, 70] a weight: a decode Linear over a batch of three rows, sizes that
// defeat the GEMV's row blocks and the vector width.
ir::Graph batched_linear_row(DType t, int64_t depth = 70) {
  IrTestBuilder b;
  auto x = b.input("x", t, {3, 1, depth});
  auto w = b.weight("w", t, {37, depth});
  b.output(b.matmul(x, viewed(w, w.view.permute({1, 0}).unsqueeze(0).expand({3, depth, 37}))));
  return b.graph;
}

TEST(Fusion, AttentionIsOnePatternKernel) {
  // 41 query rows: a block of 36 and one of 5; 43 keys, head dim 20 (not a multiple of 16).
  const ir::Graph graph = attention_graph(3, 41, 43, 20, /*scores_out=*/false);
  passes::PassContext cx;
  cx.attention_kernels = true;
  const passes::Partition p = passes::fuse(graph, cx);
  int attention = 0, others = 0;
  for (int g : passes::topological_groups(p)) {
    const passes::GroupKind kind = p.groups[g].kind;
    if (kind == passes::GroupKind::Source) continue;
    (kind == passes::GroupKind::Attention ? attention : others) += 1;
  }
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(others, 0) << "no scores buffer: nothing but the attention kernel runs";
  std::mt19937 rng(7);
  expect_both_isas_match_the_reference(
      graph,
      {random_tensor(DType::F32, {3, 41, 20}, rng), random_tensor(DType::F32, {3, 43, 20}, rng),
       random_tensor(DType::F32, {3, 43, 20}, rng), band_bias(41, 43)},
      "attention", 1e-5, {}, /*same_bits=*/false);  // the softmax's sums and exp follow the vector width
}

TEST(Fusion, AttentionWindowsStartingInsideAKeyStripMatchTheReference) {
  // Row l attends keys [l + 13, l + 34): the head's first attended key is 13, and each block of
  // 36 query rows reads a window that starts at a multiple of 16 keys past it, a few columns
  // before the block's first attended key (those must come out exactly 0).
  const int64_t L = 80, S = 120;
  const ir::Graph graph = attention_graph(2, L, S, 24, /*scores_out=*/false);
  std::mt19937 rng(9);
  expect_both_isas_match_the_reference(
      graph,
      {random_tensor(DType::F32, {2, L, 24}, rng), random_tensor(DType::F32, {2, S, 24}, rng),
       random_tensor(DType::F32, {2, S, 24}, rng), window_bias(L, S)},
      "attention windows", 1e-5, {}, /*same_bits=*/false);
}

// Groups that are not sources, by kind.
std::map<passes::GroupKind, int> group_kinds(const passes::Partition& p) {
  std::map<passes::GroupKind, int> kinds;
  for (int g : passes::topological_groups(p))
    if (p.groups[g].kind != passes::GroupKind::Source) ++kinds[p.groups[g].kind];
  return kinds;
}

// is_causal's mask as a tensor: 0 where s <= l, -inf above.
HostTensor causal_mask(int64_t L, int64_t S) {
  std::vector<float> values(static_cast<size_t>(L * S), -INFINITY);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t s = 0; s <= std::min(l, S - 1); ++s) values[static_cast<size_t>(l * S + s)] = 0.0f;
  return HostTensor::of<float>(DType::F32, {L, S}, values);
}

// The causal attention's output, and the same attention's with its mask passed as an input bias
// (native ISA): the kernel masking each row itself must give the bits the -inf bias gives.
std::pair<HostTensor, HostTensor> causal_and_masked(int64_t L, int64_t S, int64_t E, DType operands, bool bf16_out,
                                                   std::mt19937& rng) {
  std::vector<HostTensor> inputs = {random_tensor(operands, {2, L, E}, rng), random_tensor(operands, {2, S, E}, rng),
                                    random_tensor(operands, {2, S, E}, rng)};
  const ir::Graph causal = attention_graph(2, L, S, E, false, operands, false, bf16_out, 0, /*causal=*/true);
  const ir::Graph masked = attention_graph(2, L, S, E, false, operands, false, bf16_out);
  const std::string what = std::to_string(L) + "x" + std::to_string(S) + "x" + std::to_string(E);
  expect_both_isas_match_the_reference(causal, inputs, "causal attention " + what,
                                       operands == DType::F32 ? 1e-5 : 2e-2, {}, /*same_bits=*/false);
  std::vector<HostTensor> causal_inputs = inputs;
  HostTensor from_causal = run_executable(*compile_cpu(causal, {}), causal, causal_inputs)[0];
  inputs.push_back(causal_mask(L, S));
  HostTensor from_mask = run_executable(*compile_cpu(masked, {}), masked, inputs)[0];
  return {std::move(from_causal), std::move(from_mask)};
}

TEST(Fusion, CausalAttentionMasksItsRowsWithoutABias) {
  // is_causal's iota mask is not computed as a tensor: the attention kernel is the only kernel,
  // and it masks each query row past its diagonal itself, with the bits an explicit -inf bias
  // gives. Fewer keys than queries (rows past S attend every key), more, blocks of 36 rows (f32)
  // with a partial last one, head dims not a multiple of 16.
  for (const auto& [L, S, E] : {std::tuple<int64_t, int64_t, int64_t>{41, 43, 20}, {80, 60, 24}, {5, 9, 16}}) {
    passes::PassContext cx;
    cx.attention_kernels = true;
    const passes::Partition p = passes::fuse(attention_graph(2, L, S, E, false, DType::F32, false, false, 0, true), cx);
    EXPECT_EQ(group_kinds(p), (std::map<passes::GroupKind, int>{{passes::GroupKind::Attention, 1}}));
    std::mt19937 rng(21);
    const auto [from_causal, from_mask] = causal_and_masked(L, S, E, DType::F32, false, rng);
    EXPECT_TRUE(from_causal.bytes == from_mask.bytes) << L << "x" << S << ": the causal kernel differs from the mask's";
  }
}

TEST(Fusion, Bf16CausalAttentionSkipsTheChunksPastEachRowPairsDiagonal) {
  // On bf16 tiles (where the CPU has them) a pair of 16-row tiles multiplies only the 32-key
  // chunks its last row attends: 130 rows are two full blocks of 64 and a partial one; 70 x 100
  // has keys no row attends; 37 x 45 a head dim of 40 (three column tiles of P V).
  for (const auto& [L, S, E] :
       {std::tuple<int64_t, int64_t, int64_t>{130, 130, 64}, {70, 100, 64}, {41, 43, 20}, {37, 45, 40}, {4, 6, 32}}) {
    std::mt19937 rng(22);
    const auto [from_causal, from_mask] = causal_and_masked(L, S, E, DType::BF16, /*bf16_out=*/true, rng);
    EXPECT_TRUE(from_causal.bytes == from_mask.bytes) << L << "x" << S << ": the causal kernel differs from the mask's";
  }
}

TEST(Fusion, CausalMasksSharingACacheComparisonComputeNoMask) {
  // transformers' mask over a StaticCache, as in a 1,024-token prompt's prefill: one comparison
  // of the cache's slots with the cache positions (a run-time start, an i64 [] input) that every
  // layer turns into its own -inf bias. Each attention kernel masks its rows from the start it
  // reads; neither the comparison nor a bias is computed. Starts past every key, before the
  // first and far out of range (clamped, no overflow) too; f32, and bf16 on bf16 tiles where
  // the CPU has them (70 query rows: a block of 64 and a partial one).
  const int64_t L = 70, S = 90, E = 16;
  for (const DType t : {DType::F32, DType::BF16}) {
    IrTestBuilder b;
    auto widened = [&](const TensorRef& x) { return t == DType::F32 ? x : b.unary(Op::Cast, x, DType::F32); };
    const TensorRef q = widened(b.input("q", t, {2, L, E}));
    const TensorRef k = widened(b.input("k", t, {2, S, E}));
    const TensorRef v = widened(b.input("v", t, {2, S, E}));
    const TensorRef start = b.input("start", DType::I64, {});
    const TensorRef allowed = causal_comparison(b, L, S, start);
    TensorRef first = attention_of(b, q, k, v, causal_bias_of(b, allowed));
    if (t != DType::F32) first = b.unary(Op::Cast, b.unary(Op::Cast, first, t), DType::F32);  // a bf16 layer output
    const TensorRef second = attention_of(b, first, k, v, causal_bias_of(b, allowed));
    b.output(t == DType::F32 ? second : b.unary(Op::Cast, second, t));
    passes::PassContext cx;
    cx.attention_kernels = true;
    cx.attention_half_operands = true;
    const auto kinds = group_kinds(passes::fuse(b.graph, cx));
    EXPECT_EQ(kinds.at(passes::GroupKind::Attention), 2);
    EXPECT_EQ(kinds.size(), t == DType::F32 ? 1u : 2u) << "the attentions, and bf16's casts of their outputs";
    for (const int64_t shift : {int64_t{0}, int64_t{7}, int64_t{-3}, int64_t{30}, int64_t{-50}, int64_t{1} << 62,
                                -(int64_t{1} << 62)}) {
      std::mt19937 rng(24);
      expect_both_isas_match_the_reference(
          b.graph,
          {random_tensor(t, {2, L, E}, rng), random_tensor(t, {2, S, E}, rng), random_tensor(t, {2, S, E}, rng),
           HostTensor::of<int64_t>(DType::I64, {}, {shift})},
          std::string(ir::dtype_name(t)) + " causal attention from start " + std::to_string(shift),
          t == DType::F32 ? 1e-5 : 3e-2, {}, /*same_bits=*/false);
    }
  }
}

TEST(Fusion, ACausalMaskReadElsewhereStaysABias) {
  // The mask is also a graph output: it is computed once, and the attention reads it as a bias.
  ir::Graph graph = attention_graph(2, 41, 43, 20, false, DType::F32, false, false, 0, /*causal=*/true);
  const auto mask = std::find_if(graph.nodes().begin(), graph.nodes().end(),
                                 [](const ir::Node& node) { return node.op == Op::Where && node.shape.size() == 2; });
  ASSERT_NE(mask, graph.nodes().end());
  const ir::NodeId mask_id = static_cast<ir::NodeId>(mask - graph.nodes().begin());
  graph.outputs().push_back(TensorRef{mask_id, ir::View::contiguous(mask->shape)});
  passes::PassContext cx;
  cx.attention_kernels = true;
  const passes::Partition p = passes::fuse(graph, cx);
  EXPECT_EQ(group_kinds(p)[passes::GroupKind::Attention], 1);
  EXPECT_EQ(group_kinds(p)[passes::GroupKind::Pointwise], 1) << "the mask's own kernel";
  std::mt19937 rng(23);
  expect_matches_reference(graph,
                           {random_tensor(DType::F32, {2, 41, 20}, rng), random_tensor(DType::F32, {2, 43, 20}, rng),
                            random_tensor(DType::F32, {2, 43, 20}, rng)},
                           "causal attention with its mask an output", 1e-5);
}

TEST(Fusion, HalfAttentionReadsItsOperandsThroughTheirCasts) {
  // Odd sizes; 2 query rows take the decode path, 41 the packed blocks.
  for (const DType t : {DType::BF16, DType::F16}) {
    for (const int64_t L : {2, 41}) {
      const ir::Graph graph = attention_graph(3, L, 43, 20, /*scores_out=*/false, t);
      passes::PassContext cx;
      cx.attention_kernels = true;
      cx.attention_half_operands = true;
      const std::map<passes::GroupKind, int> kinds = group_kinds(passes::fuse(graph, cx));
      EXPECT_EQ(kinds, (std::map<passes::GroupKind, int>{{passes::GroupKind::Attention, 1}}))
          << "the casts of q, k and v are part of the attention kernel";
      cx.attention_half_operands = false;
      EXPECT_EQ(group_kinds(passes::fuse(graph, cx)).size(), 2u) << "without it they are kernels of their own";
      std::mt19937 rng(11);
      expect_both_isas_match_the_reference(
          graph,
          {random_tensor(t, {3, L, 20}, rng), random_tensor(t, {3, 43, 20}, rng), random_tensor(t, {3, 43, 20}, rng),
           band_bias(L, 43)},
          std::string("half attention ") + ir::dtype_name(t), 1e-5, {}, /*same_bits=*/false);
    }
  }
}

TEST(Fusion, HalfAttentionReadsASlicedCacheThroughItsCasts) {
  // A StaticCache's K and V reach the attention as casts of a slice of the cache buffer: the
  // casts join the attention, which reads the bf16 cache in place (they were f32 copies made by
  // kernels of their own, and a bf16 prompt could not round its probabilities for bf16 pairs).
  for (const int64_t L : {2, 41}) {
    const ir::Graph graph =
        attention_graph(3, L, 43, 20, /*scores_out=*/false, DType::BF16, false, /*bf16_out=*/true, /*cache_slots=*/64);
    passes::PassContext cx;
    cx.attention_kernels = true;
    cx.attention_half_operands = true;
    const passes::Partition p = passes::fuse(graph, cx);
    EXPECT_EQ(group_kinds(p)[passes::GroupKind::Attention], 1);
    for (int g : passes::topological_groups(p))
      if (p.groups[g].kind == passes::GroupKind::Attention)
        EXPECT_EQ(std::count_if(p.groups[g].nodes.begin(), p.groups[g].nodes.end(),
                                [&](ir::NodeId id) { return graph.node(id).op == Op::Cast; }),
                  3)
            << "q, k and v's casts are the attention's";
    std::mt19937 rng(17);
    expect_both_isas_match_the_reference(
        graph,
        {random_tensor(DType::BF16, {3, L, 20}, rng), random_tensor(DType::BF16, {3, 64, 20}, rng),
         random_tensor(DType::BF16, {3, 64, 20}, rng), band_bias(L, 43)},
        "sliced cache attention " + std::to_string(L), 2e-2, {}, /*same_bits=*/false);
  }
}

TEST(Fusion, Bf16AttentionWithABf16OutputRunsOnBf16TilesWhereTheCpuHasThem) {
  // A bf16 SDPA as the translator writes it (bf16 q, k and v widened, the output cast back to
  // bf16) rounds its probabilities to bf16 and multiplies bf16 pairs, on AMX tiles or with
  // vdpbf16ps (AVX512-BF16 without AMX), as eager does: within bf16's rounding of the reference.
  // Sizes cross the tiles' edges: 70 query rows (blocks of 32, the last partial), 43 and 100 keys
  // (chunks of 32), head dims 20, 40 and 64 (padded to 32; 40 is three column tiles of P V, the
  // last product one tile wide); the band skips key chunks.
  const bool amx = runtime::cpu::kernels_have_amx_bf16(runtime::cpu::CpuIsa::Native);
  const bool pairs = runtime::cpu::kernels_have_bf16_pairs_without_amx(runtime::cpu::CpuIsa::Native);
  for (const auto& [L, S, E] :
       {std::tuple<int64_t, int64_t, int64_t>{5, 43, 20}, {70, 100, 64}, {41, 43, 20}, {37, 45, 40}}) {
    const ir::Graph graph = attention_graph(2, L, S, E, /*scores_out=*/false, DType::BF16, false, /*bf16_out=*/true);
    std::mt19937 rng(13);
    const std::vector<HostTensor> inputs = {random_tensor(DType::BF16, {2, L, E}, rng),
                                            random_tensor(DType::BF16, {2, S, E}, rng),
                                            random_tensor(DType::BF16, {2, S, E}, rng), band_bias(L, S)};
    expect_both_isas_match_the_reference(graph, inputs, "bf16 attention " + std::to_string(L) + "x" + std::to_string(S),
                                         2e-2, {}, /*same_bits=*/false);
    auto exe = compile_cpu(graph, {});
    const auto& program = program_of(*exe);
    const auto attention = std::find_if(program.steps.begin(), program.steps.end(), [](const auto& step) {
      return step.what.find("scaled dot-product attention") != std::string::npos;
    });
    ASSERT_NE(attention, program.steps.end());
    EXPECT_EQ(attention->what.find("on AMX tiles") != std::string::npos, amx) << attention->what;
    EXPECT_EQ(attention->what.find("on bf16 pairs") != std::string::npos, pairs) << attention->what;
  }
  // An f32 output keeps the probabilities in f32 (HalfAttentionReadsItsOperandsThroughTheirCasts).
  auto exe = compile_cpu(attention_graph(2, 41, 43, 20, /*scores_out=*/false, DType::BF16), {});
  for (const auto& step : program_of(*exe).steps) {
    EXPECT_EQ(step.what.find("on AMX tiles"), std::string::npos) << step.what;
    EXPECT_EQ(step.what.find("on bf16 pairs"), std::string::npos) << step.what;
  }
}

TEST(Fusion, HalfAttentionKeepsACastThatIsReadElsewhere) {
  // k's f32 copy is also an output: it keeps its kernel, which the attention reads; q and v's
  // casts still join the attention.
  const ir::Graph graph = attention_graph(2, 5, 7, 16, /*scores_out=*/false, DType::BF16, /*widened_k_out=*/true);
  passes::PassContext cx;
  cx.attention_kernels = true;
  cx.attention_half_operands = true;
  const passes::Partition p = passes::fuse(graph, cx);
  EXPECT_EQ(group_kinds(p)[passes::GroupKind::Attention], 1);
  for (int g : passes::topological_groups(p)) {
    if (p.groups[g].kind != passes::GroupKind::Attention) continue;
    const auto casts = std::count_if(p.groups[g].nodes.begin(), p.groups[g].nodes.end(),
                                     [&](ir::NodeId id) { return graph.node(id).op == Op::Cast; });
    EXPECT_EQ(casts, 2) << "q's and v's casts joined the attention, k's did not";
  }
  std::mt19937 rng(12);
  expect_matches_reference(graph,
                           {random_tensor(DType::BF16, {2, 5, 16}, rng), random_tensor(DType::BF16, {2, 7, 16}, rng),
                            random_tensor(DType::BF16, {2, 7, 16}, rng), random_tensor(DType::F32, {5, 7}, rng)},
                           "half attention + widened k", 1e-5);
}

TEST(Fusion, AttentionWhoseScoresAreReadElsewhereIsNotGrouped) {
  const ir::Graph graph = attention_graph(2, 5, 7, 16, /*scores_out=*/true);
  passes::PassContext cx;
  cx.attention_kernels = true;
  const passes::Partition p = passes::fuse(graph, cx);
  for (int g : passes::topological_groups(p)) EXPECT_NE(p.groups[g].kind, passes::GroupKind::Attention);
  std::mt19937 rng(8);
  expect_matches_reference(graph,
                           {random_tensor(DType::F32, {2, 5, 16}, rng), random_tensor(DType::F32, {2, 7, 16}, rng),
                            random_tensor(DType::F32, {2, 7, 16}, rng), random_tensor(DType::F32, {5, 7}, rng)},
                           "attention + scores", 1e-5);
}

// Every tile the schedule search may pick computes what the default does: the program is built
// with the search on (so its variants are compiled), then run with each variant in place of the
// default kernel. Sizes defeat each tile: 37 gemv rows (no multiple of 2, 4 or 8), 41 and 80
// query rows (partial blocks of 18, 36 and 72), windows starting inside a key strip.
void expect_every_tile_matches_the_reference(const ir::Graph& graph, const std::vector<HostTensor>& inputs,
                                             const std::map<std::string, runtime::BufferRef>& weights,
                                             const std::vector<int64_t>& tiles, double tolerance,
                                             const std::string& what) {
  runtime::CompileOptions options;
  options.search_iterations = 8;
  options.cache_dir = test_cache_dir();
  const runtime::cpu::Program program = runtime::cpu::build_program(graph, options);
  std::vector<HostTensor> reference_inputs = inputs;
  const auto expected = run_executable(*compile_reference(graph, weights), graph, reference_inputs);
  int tiled_steps = 0;
  for (const runtime::cpu::Step& step : program.steps) {
    if (step.variants.empty()) continue;
    ++tiled_steps;
    std::vector<int64_t> found;
    for (const runtime::cpu::KernelVariant& v : step.variants) found.push_back(v.tile);
    EXPECT_EQ(found, tiles) << what << ": " << step.what;
  }
  ASSERT_EQ(tiled_steps, 1) << what;
  for (size_t k = 0; k < tiles.size(); ++k) {
    runtime::cpu::Program variant = program;
    for (runtime::cpu::Step& step : variant.steps)
      if (!step.variants.empty()) step.fn = step.variants[k].fn;
    const runtime::cpu::CpuExecutable executable(std::move(variant), weights, 2);
    std::vector<HostTensor> variant_inputs = inputs;
    const auto actual = run_executable(executable, graph, variant_inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t o = 0; o < actual.size(); ++o)
      expect_same(actual[o], expected[o], tolerance, what + " tile " + std::to_string(tiles[k]));
  }
}

TEST(TileVariants, EveryAttentionTileMatchesTheReference) {
  std::mt19937 rng(13);
  expect_every_tile_matches_the_reference(
      attention_graph(3, 41, 43, 20, false),
      {random_tensor(DType::F32, {3, 41, 20}, rng), random_tensor(DType::F32, {3, 43, 20}, rng),
       random_tensor(DType::F32, {3, 43, 20}, rng), band_bias(41, 43)},
      {}, {codegen::kAttentionRows / 2, codegen::kAttentionRows * 2}, 1e-5, "attention 41x43");
  const int64_t L = 80, S = 120;
  expect_every_tile_matches_the_reference(
      attention_graph(2, L, S, 24, false),
      {random_tensor(DType::F32, {2, L, 24}, rng), random_tensor(DType::F32, {2, S, 24}, rng),
       random_tensor(DType::F32, {2, S, 24}, rng), window_bias(L, S)},
      {}, {codegen::kAttentionRows / 2, codegen::kAttentionRows * 2}, 1e-5, "attention windows");
}

TEST(TileVariants, EveryGemvTileMatchesTheReference) {
  std::mt19937 rng(17);
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    HostTensor weight = random_tensor(t, {37, 70}, rng);
    expect_every_tile_matches_the_reference(batched_linear_row(t), {random_tensor(t, {3, 1, 70}, rng)},
                                            {{"w", weight.ref()}},
                                            {codegen::kGemvRows / 2, codegen::kGemvRows * 2},
                                            t == DType::F32 ? 1e-5 : 2e-2, std::string("gemv ") + ir::dtype_name(t));
  }
}

TEST(TileVariants, OnlyBuiltWhenTheSearchIsOnAndOnlyWhereTheyDiffer) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {1, 70});
  auto w = b.weight("w", DType::F32, {37, 70});
  auto y = b.matmul(x, viewed(w, w.view.permute({1, 0})));
  auto one_row = b.weight("one_row", DType::F32, {1, 70});  // a gemv of one output row: no tile to vary
  auto v = b.weight("v", DType::F32, {70, 37});
  b.output(b.matmul(y, viewed(v, v.view.permute({1, 0}))));
  b.output(b.matmul(x, viewed(one_row, one_row.view.permute({1, 0}))));
  runtime::CompileOptions options;
  options.cache_dir = test_cache_dir();
  for (const runtime::cpu::Step& step : runtime::cpu::build_program(b.graph, options).steps)
    EXPECT_TRUE(step.variants.empty()) << "search off: " << step.what;
  options.search_iterations = 8;
  int tiled = 0;
  for (const runtime::cpu::Step& step : runtime::cpu::build_program(b.graph, options).steps) tiled += !step.variants.empty();
  EXPECT_EQ(tiled, 2) << "the two gemvs of 37 and 70 rows, not the one of 1 row";
}

// With the search on, a graph with attention is built twice: as the attention pattern kernel and
// as BLAS GEMMs around a softmax kernel. Both compute the reference's values; the first call
// times them and keeps one; a second compile reads that choice back from the cache.
TEST(FusionSearch, TimesAttentionFusedAndUnfusedAndCachesTheChoice) {
  const std::string cache = (std::filesystem::temp_directory_path() / "luminal-fusion-search").string();
  std::filesystem::remove_all(cache);
  const ir::Graph graph = attention_graph(3, 41, 43, 20, /*scores_out=*/false);
  std::mt19937 rng(19);
  const std::vector<HostTensor> inputs = {random_tensor(DType::F32, {3, 41, 20}, rng),
                                          random_tensor(DType::F32, {3, 43, 20}, rng),
                                          random_tensor(DType::F32, {3, 43, 20}, rng), band_bias(41, 43)};
  std::vector<HostTensor> reference_inputs = inputs;
  const auto expected = run_executable(*compile_reference(graph), graph, reference_inputs);
  runtime::CompileOptions options;
  options.search_iterations = 16;
  options.cache_dir = cache;
  options.debug_dir = cache + "/debug";
  for (int process = 0; process < 2; ++process) {
    const auto executable = compile_cpu(graph, {}, options);
    const auto* searched = dynamic_cast<const runtime::cpu::FusionSearchExecutable*>(executable.get());
    ASSERT_NE(searched, nullptr) << "a graph with attention gets the fusion search";
    EXPECT_EQ(searched->alternative(0).program().attention_kernels, 1u);
    EXPECT_EQ(searched->alternative(1).program().attention_kernels, 0u);
    int gemms = 0, gemvs = 0;
    for (const runtime::cpu::Step& step : searched->alternative(1).program().steps) {
      gemms += step.kind == runtime::cpu::Step::Kind::Gemm;
      gemvs += step.what.find("gemv per row") != std::string::npos;
    }
    // q kT reads both operands along the head dim and has 41 <= kF32GemvRows rows: the GEMV
    // kernel; p v reads v across its rows: BLAS.
    EXPECT_EQ(gemms, 1) << "p v through BLAS";
    EXPECT_EQ(gemvs, 1) << "q kT as the few-row GEMV";
    std::vector<const runtime::Executable*> runs = {executable.get(), &searched->alternative(0), &searched->alternative(1)};
    for (size_t r = 0; r < runs.size(); ++r) {
      std::vector<HostTensor> call_inputs = inputs;
      const auto actual = run_executable(*runs[r], graph, call_inputs);
      expect_same(actual[0], expected[0], 1e-5, "attention, run " + std::to_string(r));
    }
  }
  std::ifstream log_file(cache + "/debug/search_log.txt");
  const std::string log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("fusion: attention kernels "), std::string::npos) << log;
  EXPECT_NE(log.find("GEMMs around softmax"), std::string::npos) << log;
  EXPECT_NE(log.find("the choice from"), std::string::npos) << "the second compile's\n" << log;
}

TEST(FusionSearch, OnlyGraphsWithAnAlternativeGetIt) {
  IrTestBuilder b;
  b.output(b.unary(Op::Exp, b.input("x", DType::F32, {64, 1024})));
  runtime::CompileOptions options;
  options.search_iterations = 16;
  const auto executable = compile_cpu(b.graph, {}, options);
  EXPECT_NE(dynamic_cast<const runtime::cpu::CpuExecutable*>(executable.get()), nullptr);
  options.search_iterations = 0;
  const auto heuristic = compile_cpu(attention_graph(2, 5, 7, 16, false), {}, options);
  EXPECT_NE(dynamic_cast<const runtime::cpu::CpuExecutable*>(heuristic.get()), nullptr) << "search off";
}

TEST(Fusion, RmsNormWithWeightIsOneRowKernel) {
  IrTestBuilder b;
  const ir::Shape shape = {5, 257};
  auto x = b.input("x", DType::F32, shape);
  auto w = b.weight("w", DType::F32, {257});
  auto sq = b.binary(Op::Mul, x, x);
  auto sum = b.reduce(Op::SumReduce, sq, 1);
  auto mean = b.binary(Op::Mul, sum, b.constant(1.0 / 257, DType::F32, {5, 1}));
  auto inv = b.unary(Op::Recip, b.unary(Op::Sqrt, b.binary(Op::Add, mean, b.constant(1e-6, DType::F32, {5, 1}))));
  auto normed = b.binary(Op::Mul, x, viewed(inv, inv.view.expand(shape)));
  b.output(b.binary(Op::Mul, normed, viewed(w, w.view.unsqueeze(0).expand(shape))));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "for (int64_t i1"), 2u) << source;
  std::mt19937 rng(3);
  HostTensor weight = random_tensor(DType::F32, {257}, rng);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {5, 257}, rng)}, "rms_norm", 1e-5, {{"w", weight.ref()}});
}

// A reduction over an axis the input is not contiguous along runs its rows side by side
// (Kernel::lane_axis): each step along the axis reads a run of columns contiguously. It read one
// element per cache line a row at a time: x.sum(0) of 1024 x 1024 took 6.5 ms against eager's
// 0.55. Each column is summed in order, so both ISAs give the same bits. The same reduction of a
// transposed input (contiguous along the axis) stays a row kernel.
TEST(Fusion, ReductionAcrossRowsRunsColumnsSideBySide) {
  for (const bool transposed : {false, true}) {
    IrTestBuilder b;
    auto x = b.input("x", DType::F32, transposed ? ir::Shape{1030, 37} : ir::Shape{37, 1030});
    auto rows = transposed ? viewed(x, x.view.permute({1, 0})) : x;
    auto doubled = b.binary(Op::Mul, rows, b.constant(2.0, DType::F32, {37, 1030}));
    auto sum = b.reduce(Op::SumReduce, doubled, 0);
    b.output(b.binary(Op::Mul, sum, b.constant(1.0 / 37, DType::F32, {1, 1030})));
    b.output(b.reduce(Op::MaxReduce, rows, 0));
    passes::PassContext cx;
    const passes::Partition p = passes::fuse(b.graph, cx);
    int rows_kernels = 0;
    for (int g : passes::topological_groups(p)) {
      const passes::Group& group = p.groups[g];
      if (group.kind != passes::GroupKind::Row) continue;
      ++rows_kernels;
      const codegen::Kernel kernel =
          codegen::lower_loop_group(b.graph, group.nodes, group.domain, group.reduce_axis, passes::stored_nodes(b.graph, p, g))
              .kernel;
      EXPECT_EQ(codegen::cpp::column_lane_axis(kernel), transposed ? -1 : 1);
    }
    EXPECT_GT(rows_kernels, 0);
    std::mt19937 rng(21);
    expect_both_isas_match_the_reference(
        b.graph, {random_tensor(DType::F32, transposed ? std::vector<int64_t>{1030, 37} : std::vector<int64_t>{37, 1030}, rng)},
        transposed ? "row sums of a transposed input" : "column sums", 1e-5, {}, !transposed);
  }
}

TEST(Fusion, LayerNormFusesBothReductions) {
  IrTestBuilder b;
  const ir::Shape shape = {4, 100};
  auto x = b.input("x", DType::F32, shape);
  auto mean = b.binary(Op::Mul, b.reduce(Op::SumReduce, x, 1), b.constant(0.01, DType::F32, {4, 1}));
  auto centred = b.binary(Op::Sub, x, viewed(mean, mean.view.expand(shape)));
  auto var = b.binary(Op::Mul, b.reduce(Op::SumReduce, b.binary(Op::Mul, centred, centred), 1),
                      b.constant(0.01, DType::F32, {4, 1}));
  auto inv = b.unary(Op::Recip, b.unary(Op::Sqrt, var));
  b.output(b.binary(Op::Mul, centred, viewed(inv, inv.view.expand(shape))));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "for (int64_t i1"), 3u) << source;
  std::mt19937 rng(4);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {4, 100}, rng)}, "layer_norm", 1e-5);
}

// native_layer_norm returns mean and rstd too: per-row outputs stored before a final pass that
// reads them (regression: rstd was defined after the loop that used it).
TEST(Fusion, LayerNormWithPerRowOutputs) {
  IrTestBuilder b;
  const ir::Shape shape = {2, 9};
  auto x = b.input("x", DType::F32, shape);
  auto mean = b.binary(Op::Div, b.reduce(Op::SumReduce, x, 1), b.constant(9.0, DType::F32, {2, 1}));
  auto centred = b.binary(Op::Sub, x, viewed(mean, mean.view.expand(shape)));
  auto var = b.binary(Op::Div, b.reduce(Op::SumReduce, b.binary(Op::Mul, centred, centred), 1),
                      b.constant(9.0, DType::F32, {2, 1}));
  auto rstd = b.unary(Op::Recip, b.unary(Op::Sqrt, b.binary(Op::Add, var, b.constant(0.5, DType::F32, {2, 1}))));
  b.output(mean);
  b.output(rstd);
  b.output(b.binary(Op::Mul, centred, viewed(rstd, rstd.view.expand(shape))));
  std::mt19937 rng(8);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {2, 9}, rng)}, "layer_norm outputs", 1e-5);
}

TEST(FusionLegality, PermutedReadIsNotFused) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 4});
  auto e = b.unary(Op::Exp, x);
  auto t = viewed(e, e.view.permute({1, 0}));
  b.output(b.unary(Op::Neg, t));
  const passes::Partition p = passes::initial_partition(b.graph);
  const passes::MergeDecision d = passes::legal_merge(b.graph, p, p.group_of[e.node], p.group_of[e.node + 1], 96);
  EXPECT_FALSE(d.legal);
  EXPECT_NE(d.reason.find("through the view"), std::string::npos) << d.reason;
}

TEST(FusionLegality, DifferentShapesAndMatmulAreNotFused) {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 8});
  auto w = b.input("w", DType::F32, {8, 3});
  auto e = b.unary(Op::Exp, x);
  auto m = b.matmul(e, w);
  b.output(b.unary(Op::Neg, m));
  const passes::Partition p = passes::initial_partition(b.graph);
  EXPECT_FALSE(passes::legal_merge(b.graph, p, p.group_of[e.node], p.group_of[m.node], 96).legal);
  EXPECT_FALSE(passes::legal_merge(b.graph, p, p.group_of[m.node], p.group_of[m.node + 1], 96).legal);
}

TEST(FusionLegality, NonConvexMergeIsRejected) {
  // a -> matmul -> c and a -> c: merging a into c would swallow the path through the matmul.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 4});
  auto a = b.unary(Op::Exp, x);
  auto m = b.matmul(a, x);
  auto c = b.binary(Op::Add, a, m);
  b.output(c);
  const passes::Partition p = passes::initial_partition(b.graph);
  const passes::MergeDecision d = passes::legal_merge(b.graph, p, p.group_of[a.node], p.group_of[c.node], 96);
  EXPECT_FALSE(d.legal);
  EXPECT_NE(d.reason.find("convex"), std::string::npos) << d.reason;
  std::mt19937 rng(5);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {4, 4}, rng)}, "non-convex", 1e-5);
}

TEST(Fusion, GemvEpilogueAndIdenticalLayersShareKernels) {
  // Two identical "layers": x @ W^T + bias, then silu. The GEMV is generated; both layers use
  // the same two functions.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {1, 64});
  TensorRef h = x;
  std::map<std::string, runtime::BufferRef> weights;
  std::vector<HostTensor> storage;
  std::mt19937 rng(6);
  storage.reserve(4);
  for (int layer = 0; layer < 2; ++layer) {
    auto w = b.weight("w" + std::to_string(layer), DType::F32, {64, 64});
    auto bias = b.weight("b" + std::to_string(layer), DType::F32, {64});
    auto y = b.matmul(h, viewed(w, w.view.permute({1, 0})));
    auto z = b.binary(Op::Add, y, viewed(bias, bias.view.unsqueeze(0)));
    h = b.binary(Op::Mul, z, b.unary(Op::Sigmoid, z));
    storage.push_back(random_tensor(DType::F32, {64, 64}, rng));
    storage.push_back(random_tensor(DType::F32, {64}, rng));
  }
  for (int layer = 0; layer < 2; ++layer) {
    weights["w" + std::to_string(layer)] = storage[2 * layer].ref();
    weights["b" + std::to_string(layer)] = storage[2 * layer + 1].ref();
  }
  b.output(h);
  auto exe = compile_cpu(b.graph, weights);
  const auto& program = program_of(*exe);
  EXPECT_EQ(program.kernel_count, 4u);
  EXPECT_EQ(program.unique_kernels, 2u);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {1, 64}, rng)}, "gemv layers", 2e-4, weights);
}

TEST(Fusion, HalfGemvReadsTheWeightInItsOwnDtype) {
  // A bf16/f16 decode Linear is one GEMV pattern kernel: no Cast kernel widening the weight into
  // an f32 copy on every call. Sizes that defeat both the 4-row blocks and the vector width.
  // Depth 53: bf16 rows (read one after another, two 16-lane steps at a time) end with a lone step.
  std::mt19937 rng(11);
  for (int64_t depth : {70, 53})
    for (DType t : {DType::BF16, DType::F16, DType::F32}) {
      const ir::Graph graph = batched_linear_row(t, depth);
      HostTensor weight = random_tensor(t, {37, depth}, rng);
      std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
      auto exe = compile_cpu(graph, weights);
      const auto& program = program_of(*exe);
      ASSERT_EQ(program.steps.size(), 1u) << ir::dtype_name(t);
      EXPECT_NE(program.steps[0].what.find("gemv"), std::string::npos) << program.steps[0].what;
      expect_matches_reference(graph, {random_tensor(t, {3, 1, depth}, rng)},
                               std::string("gemv ") + ir::dtype_name(t) + " depth " + std::to_string(depth),
                               t == DType::F32 ? 1e-5 : 2e-2, weights);
    }
}

TEST(Fusion, SequentialRowGemvReadsTwoStreamsWithTheSameSums) {
  // A [1, N] GEMV whose rows are read one after another (bf16, and f32 or bf16 activations times
  // an int8 weight) runs the halves of each thread's whole blocks of rows as two streams
  // (lm_gemv_rows_pair), the rest one block or row at a time. Each row's sums are the same
  // whichever way it is read: one to three threads split 203 rows (101.5 apiece, so halves of
  // whole blocks and leftovers) and give the same bits, which match the reference. Depth 300:
  // paired vector steps, a lone one (bf16's 16-lane steps) and a scalar tail.
  std::mt19937 rng(18);
  const int64_t n = 203, depth = 300;
  for (auto [activations, weight_dtype] : {std::pair<DType, DType>{DType::BF16, DType::BF16},
                                           {DType::F32, DType::I8}, {DType::BF16, DType::I8}}) {
    IrTestBuilder b;
    auto x = b.input("x", activations, {1, depth});
    auto w = b.weight("w", weight_dtype, {n, depth});
    TensorRef weight_t = viewed(w, w.view.permute({1, 0}));
    if (weight_dtype != activations) weight_t = b.unary(Op::Cast, weight_t, activations);
    const TensorRef product = b.matmul(x, weight_t);
    b.output(product);
    HostTensor weight = random_tensor(weight_dtype, {n, depth}, rng);
    std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
    const std::string what = std::string(ir::dtype_name(activations)) + " x " + ir::dtype_name(weight_dtype);
    std::vector<HostTensor> inputs{random_tensor(activations, {1, depth}, rng)};
    std::vector<HostTensor> reference_inputs = inputs;
    const auto expected = run_executable(*compile_reference(b.graph, weights), b.graph, reference_inputs);
    // The GEMV as the cpu runtime lowers it: reading the int8 weight past its Cast.
    const ir::Graph folded = passes::read_quantized_weights_in_gemvs(b.graph, {});
    EXPECT_NE(codegen::cpp::emit_kernel(codegen::lower_gemv(folded, product.node).kernel, "k").find("lm_gemv_rows_pair<"),
              std::string::npos)
        << what;
    std::vector<HostTensor> first;
    for (int threads : {1, 2, 3}) {
      runtime::CompileOptions options;
      options.num_threads = threads;
      auto exe = compile_cpu(b.graph, weights, options);
      ASSERT_EQ(program_of(*exe).steps.size(), 1u) << what;
      std::vector<HostTensor> cpu_inputs = inputs;
      const auto actual = run_executable(*exe, b.graph, cpu_inputs);
      expect_same(actual[0], expected[0], activations == DType::F32 ? 2e-3 : 2e-2,
                  what + ", " + std::to_string(threads) + " threads");
      if (first.empty()) first = actual;
      EXPECT_TRUE(actual[0].bytes == first[0].bytes) << what << ": " << threads << " threads differ from one";
    }
  }
}

TEST(Fusion, HalfColumnGemvStreamsAKByNWeight) {
  // x @ W with W [K, N] row-major (GPT-2's Conv1D) in bf16/f16: the GEMV kernel's column form,
  // the weight read in its dtype. Batched (three heads, each its own [K, N] slice) and with a
  // depth (37: four 8-row steps and 5 rows) and width (45: two 16-column blocks and 13) that
  // reach every tail; on four threads (more than the batch) the 45 columns split into runs of
  // 16, 16 and 13.
  std::mt19937 rng(14);
  for (DType t : {DType::BF16, DType::F16}) {
    IrTestBuilder b;
    auto x = b.input("x", t, {3, 1, 37});
    auto w = b.weight("w", t, {3, 37, 45});
    b.output(b.matmul(x, w));
    HostTensor weight = random_tensor(t, {3, 37, 45}, rng);
    std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
    runtime::CompileOptions options;
    options.num_threads = 4;
    auto exe = compile_cpu(b.graph, weights, options);
    const auto& program = program_of(*exe);
    ASSERT_EQ(program.steps.size(), 1u) << ir::dtype_name(t);
    EXPECT_NE(program.steps[0].what.find("weight [K, N]"), std::string::npos) << program.steps[0].what;
    std::vector<HostTensor> inputs{random_tensor(t, {3, 1, 37}, rng)};
    std::vector<HostTensor> reference_inputs = inputs;
    const auto expected = run_executable(*compile_reference(b.graph, weights), b.graph, reference_inputs);
    const auto actual = run_executable(*exe, b.graph, inputs);
    ASSERT_EQ(actual.size(), 1u);
    expect_same(actual[0], expected[0], 2e-2, std::string("column gemv ") + ir::dtype_name(t));
  }
}

TEST(Fusion, HalfGemvComputesAFewRowsInTheWeightsDtype) {
  // A short bf16/f16 prompt through a Linear (M <= kHalfGemvRows) is the GEMV kernel a row at a
  // time, the weight read in its dtype: no widened f32 copy of it per call. Odd sizes (5 rows,
  // 37 outputs, depth 70) defeat the 4-row blocks and the vector width.
  std::mt19937 rng(13);
  for (DType t : {DType::BF16, DType::F16}) {
    IrTestBuilder b;
    auto x = b.input("x", t, {5, 70});
    auto w = b.weight("w", t, {37, 70});
    b.output(b.matmul(x, viewed(w, w.view.permute({1, 0}))));
    HostTensor weight = random_tensor(t, {37, 70}, rng);
    std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
    auto exe = compile_cpu(b.graph, weights);
    const auto& program = program_of(*exe);
    ASSERT_EQ(program.steps.size(), 1u) << ir::dtype_name(t);
    EXPECT_NE(program.steps[0].what.find("gemv per row"), std::string::npos) << program.steps[0].what;
    expect_matches_reference(b.graph, {random_tensor(t, {5, 70}, rng)}, std::string("few-row gemv ") + ir::dtype_name(t),
                             2e-2, weights);
  }
}

TEST(Fusion, Bf16PromptMultipliesBf16PairsWhereTheCpuHasThem) {
  // A bf16 prompt through a bf16 Linear, where the kernels have AVX512-BF16 (and no AMX): x's
  // rows packed as bf16 pairs (runs of 32 values transposed in registers, then the tail),
  // multiplied by vdpbf16ps (lm_gemv_bf16_strips, blocks of six weight rows) up to
  // kBf16PairGemvRows rows (on AMX tiles kAmxBf16PairGemvRows); elsewhere the row GEMV up to
  // kHalfGemvRows; past that a GEMM. Rows: a last strip of at most 8 (two pairs a lane), a
  // partial strip of 9, whole strips of 16, two strips and a partial or a short one (33, 40),
  // three, five and seven whole strips (tiles of 3, 3 + 2 and 4 + 3 strips), six and a short one
  // (100), each limit (AMX tiles', vdpbf16ps') and one past. 37 outputs (six blocks of six and a
  // row); depth 70 and 302 (a chunk of 256, then 46, padded to 48 in pairs); x's rows a view
  // further apart than the depth. Both ISAs against the reference (avx2 has no bf16 pairs:
  // another kernel, so not the same bits).
  std::mt19937 rng(19);
  for (int64_t depth : {int64_t{70}, int64_t{302}})
    for (int64_t rows : {int64_t{2}, int64_t{7}, codegen::kHalfGemvRows, codegen::kHalfGemvRows + 1, int64_t{16},
                         int64_t{33}, int64_t{40}, int64_t{48}, codegen::kAmxBf16PairGemvRows,
                         codegen::kAmxBf16PairGemvRows + 1, int64_t{80}, int64_t{100}, int64_t{112},
                         codegen::kBf16PairGemvRows, codegen::kBf16PairGemvRows + 1}) {
      const int64_t stride = depth + 6;
      IrTestBuilder b;
      auto x = b.input("x", DType::BF16, {rows, stride});
      auto w = b.weight("w", DType::BF16, {37, depth});
      auto x_rows = viewed(x, x.view.slice(1, Expr(int64_t{2}), Expr(2 + depth), 1));
      const TensorRef product = b.matmul(x_rows, viewed(w, w.view.permute({1, 0})));
      b.output(product);
      const bool few = rows <= codegen::kBf16PairGemvRows;
      EXPECT_EQ(passes::is_bf16_pair_gemv(b.graph, b.graph.node(product.node), codegen::kBf16PairGemvRows), few)
          << rows;
      HostTensor weight = random_tensor(DType::BF16, {37, depth}, rng);
      std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
      auto exe = compile_cpu(b.graph, weights);
      const auto& program = program_of(*exe);
      // The pairs (on AMX tiles up to kAmxBf16PairGemvRows), or on a CPU without them the row
      // GEMV of at most kHalfGemvRows rows.
      const bool pairs = runtime::cpu::kernels_multiply_bf16_pairs(runtime::cpu::CpuIsa::Native);
      const bool amx = runtime::cpu::kernels_have_amx_bf16(runtime::cpu::CpuIsa::Native);
      const bool gemv = pairs ? rows <= (amx ? codegen::kAmxBf16PairGemvRows : codegen::kBf16PairGemvRows)
                              : rows <= codegen::kHalfGemvRows;
      if (few) {
        codegen::Kernel kernel = codegen::lower_gemv(b.graph, product.node).kernel;
        kernel.gemv.bf16_pairs = true;
        EXPECT_NE(codegen::cpp::emit_kernel(kernel, "k").find("lm_gemv_bf16_strips<6>"), std::string::npos) << rows;
      }
      if (gemv) {
        ASSERT_EQ(program.steps.size(), 1u) << rows;
        EXPECT_NE(program.steps[0].what.find("gemv per row"), std::string::npos) << rows << ": " << program.steps[0].what;
        // Every call of the strips kernel packs x again: the pool gives it chunks of at least
        // kGemvStripsChunkRows weight rows (here one chunk a thread), the row GEMV any chunk.
        EXPECT_EQ(program.steps[0].min_chunk_items,
                  amx ? codegen::kAmxGemvChunkRows : pairs ? codegen::kGemvStripsChunkRows : int64_t{1})
            << rows;
        EXPECT_EQ(program.steps[0].what.find("on AMX tiles") != std::string::npos, amx) << program.steps[0].what;
      } else {
        EXPECT_GT(program.steps.size(), 1u) << rows;  // widened to f32 for sgemm
      }
      // bf16 outputs: their rounding, after sums in another order than the reference's.
      expect_both_isas_match_the_reference(
          b.graph, {random_tensor(DType::BF16, {rows, stride}, rng)},
          "bf16 prompt, rows " + std::to_string(rows) + ", depth " + std::to_string(depth), 2e-2, weights,
          /*same_bits=*/false);
    }
}

TEST(Fusion, ALinearsBiasJoinsTheGemvsStore) {
  // x [rows, depth] x w^T + bias [37] broadcast over the rows (an addmm): where the product is a
  // decode row's GEMV (one row: paired weight streams, then single rows) or a strips one (f32 up
  // to kF32GemvRows rows; bf16 as bf16 pairs where the CPU has them) the bias is added to each f32
  // sum before the store, so there is one step and no Add kernel. The bias
  // read through a view with an offset; a product also read elsewhere keeps its Add. Both ISAs
  // against the reference (bf16: one rounding of sum + bias where the reference rounds twice).
  std::mt19937 rng(23);
  const bool pairs = runtime::cpu::kernels_multiply_bf16_pairs(runtime::cpu::CpuIsa::Native);
  for (DType dtype : {DType::F32, DType::BF16})
    for (int64_t rows : {int64_t{1}, int64_t{2}, int64_t{9}, int64_t{33}})
      for (bool product_also_an_output : {false, true}) {
        const int64_t depth = 70;
        IrTestBuilder b;
        auto x = b.input("x", dtype, {rows, depth});
        auto w = b.weight("w", dtype, {37, depth});
        auto bias = b.weight("bias", dtype, {40});
        const TensorRef product = b.matmul(x, viewed(w, w.view.permute({1, 0})));
        const ir::View bias_row = bias.view.slice(0, Expr(int64_t{3}), Expr(int64_t{40}), 1).unsqueeze(0);
        const TensorRef sum = b.binary(Op::Add, product, viewed(bias, bias_row.expand({rows, 37})));
        b.output(sum);
        if (product_also_an_output) b.output(product);
        HostTensor weight = random_tensor(dtype, {37, depth}, rng), bias_values = random_tensor(dtype, {40}, rng);
        std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}, {"bias", bias_values.ref()}};
        auto exe = compile_cpu(b.graph, weights);
        const auto& program = program_of(*exe);
        const bool strips = rows == 1 || (dtype == DType::F32 ? rows <= codegen::kF32GemvRows : pairs);
        const std::string what = "rows " + std::to_string(rows) + " " + ir::dtype_name(dtype) +
                                 (product_also_an_output ? ", product an output" : "");
        size_t adds = 0, with_bias = 0;
        for (const runtime::cpu::Step& step : program.steps) {
          adds += step.what.find("pointwise kernel: Add") != std::string::npos;
          with_bias += step.what.find(" + bias") != std::string::npos;
        }
        if (strips && !product_also_an_output) {
          EXPECT_EQ(program.steps.size(), 1u) << what;
          EXPECT_EQ(with_bias, 1u) << what;
          EXPECT_EQ(adds, 0u) << what;
        } else {
          EXPECT_GT(program.steps.size(), 1u) << what;
          EXPECT_EQ(with_bias, 0u) << what;
        }
        expect_both_isas_match_the_reference(b.graph, {random_tensor(dtype, {rows, depth}, rng)}, "linear + bias, " + what,
                                             dtype == DType::F32 ? 1e-4 : 2e-2, weights, /*same_bits=*/false);
      }
}

TEST(Fusion, Bf16PromptThroughAKByNWeightMultipliesBf16PairsWhereTheCpuHasThem) {
  // x @ W with a bf16 W [K, N] (GPT-2's Conv1D) and a prompt's rows, where the kernels have
  // AVX512-BF16 (and no AMX): the column GEMV's bf16-pair form (lm_gemm_bf16_columns) up to
  // kBf16PairColumnRows rows, oneDNN's GEMM (or sgemm) past it and elsewhere. Rows: tiles of 12, 8,
  // 4 and 1 (2, 13, 33), 64 and one past; 45 columns (a block of 32 and a tail of 13 through the
  // one-row column GEMV) and 96 (three blocks over two items of 64 and 32); an odd depth (37: the
  // last weight row paired with zeros) and 302; W a column slice of a wider weight and x's rows
  // a view further apart than the depth. Both ISAs against the reference.
  std::mt19937 rng(23);
  const bool pairs = runtime::cpu::kernels_have_bf16_pairs_without_amx(runtime::cpu::CpuIsa::Native);
  for (int64_t depth : {int64_t{37}, int64_t{302}})
    for (int64_t n : {int64_t{45}, int64_t{96}})
      for (int64_t rows : {int64_t{2}, int64_t{13}, int64_t{33}, codegen::kBf16PairColumnRows,
                           codegen::kBf16PairColumnRows + 1}) {
        const std::string what =
            "rows " + std::to_string(rows) + ", depth " + std::to_string(depth) + ", columns " + std::to_string(n);
        const int64_t stride = depth + 6;
        IrTestBuilder b;
        auto x = b.input("x", DType::BF16, {rows, stride});
        auto w = b.weight("w", DType::BF16, {depth, n + 7});
        auto x_rows = viewed(x, x.view.slice(1, Expr(int64_t{2}), Expr(2 + depth), 1));
        auto w_columns = viewed(w, w.view.slice(1, Expr(int64_t{3}), Expr(3 + n), 1));
        const TensorRef product = b.matmul(x_rows, w_columns);
        b.output(product);
        const bool few = rows <= codegen::kBf16PairColumnRows;
        EXPECT_EQ(passes::is_column_gemv(b.graph, b.graph.node(product.node), {.bf16_pair_columns = codegen::kBf16PairColumnRows}), few) << what;
        EXPECT_FALSE(passes::is_column_gemv(b.graph, b.graph.node(product.node))) << what;  // without the pairs
        HostTensor weight = random_tensor(DType::BF16, {depth, n + 7}, rng);
        std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
        auto exe = compile_cpu(b.graph, weights);
        const auto& program = program_of(*exe);
        if (pairs && few) {
          ASSERT_EQ(program.steps.size(), 1u) << what;
          EXPECT_NE(program.steps[0].what.find("bf16 pairs"), std::string::npos) << what << ": " << program.steps[0].what;
        } else {
          for (const auto& step : program.steps)
            EXPECT_EQ(step.what.find("bf16 pairs"), std::string::npos) << what << ": " << step.what;
        }
        // oneDNN's GEMM (a CPU with AMX keeps such prompts there) runs only with luminal._C loaded,
        // not in this binary: tests/ops/test_linalg.py's Conv1D test checks its values against eager.
        const bool through_aten = std::any_of(program.steps.begin(), program.steps.end(), [](const auto& step) {
          return step.what.find("(ATen") != std::string::npos;
        });
        if (through_aten) continue;
        expect_both_isas_match_the_reference(b.graph, {random_tensor(DType::BF16, {rows, stride}, rng)},
                                             "bf16 prompt x [K, N], " + what, 2e-2, weights, /*same_bits=*/false);
      }
}

TEST(Fusion, F32GemvMultipliesAFewRowsPackedIntoStrips) {
  // A short f32 prompt through a Linear (M <= kF32GemvRows, more where the strips outrun BLAS) is
  // the GEMV kernel: x's rows packed into strips of 16 that each block of six weight rows (twelve
  // for one strip) multiplies in registers (lm_gemv_strips, in panels), the weight read in place;
  // more rows go to BLAS. Row counts below, at and past a strip (a zero-padded one; up to eight rows in
  // the last strip run as half a strip, lm_tile_half_strip: 2, 7, 17 and 40 rows, where 9 runs a
  // whole one), 37 outputs (a 1-row block after six of six), depth 70 and 300 (a chunk of 256 and
  // a tail) and 2,100 (64 rows of it outgrow half of L2: a panel of the six whole
  // blocks, then one row, over chunks of 256 and a tail), x's rows a view further apart, and a
  // batch dim with a weight per index (x packed again per index); on four threads. 40 rows are
  // three strips: one AVX-512 tile of two strips and one of a single strip. 200 rows are the
  // strips on a Zen 5 (kZen5F32GemvRows), 300 there beside BLAS's AVX2 kernels
  // (kZen5F32GemvRowsBesideAvx2Blas), BLAS elsewhere. A weight repeated over the
  // batch goes to BLAS, which folds the batch into M. The ISAs give the same bits where both take
  // the same path.
  std::mt19937 rng(15);
  for (int64_t depth : {int64_t{70}, int64_t{300}, int64_t{2100}})
    for (int64_t rows : {int64_t{2}, int64_t{7}, int64_t{9}, int64_t{16}, int64_t{17}, int64_t{40}, codegen::kF32GemvRows,
                         codegen::kF32GemvRows + 1, int64_t{200}, int64_t{300}}) {
      const int64_t stride = depth + 5 + depth / 30;
      IrTestBuilder b;
      auto x = b.input("x", DType::F32, {2, rows, stride});
      auto w = b.weight("w", DType::F32, {2, 37, depth});
      auto x_rows = viewed(x, x.view.slice(2, Expr(int64_t{0}), Expr(depth), 1));
      const TensorRef product = b.matmul(x_rows, viewed(w, w.view.permute({0, 2, 1})));
      b.output(product);
      HostTensor weight = random_tensor(DType::F32, {2, 37, depth}, rng);
      std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
      runtime::CompileOptions options;
      options.num_threads = 4;
      auto exe = compile_cpu(b.graph, weights, options);
      const auto& program = program_of(*exe);
      ASSERT_EQ(program.steps.size(), 1u) << rows;
      const int64_t native_rows = f32_strip_rows(runtime::cpu::CpuIsa::Native, depth);
      const int64_t avx2_rows = f32_strip_rows(runtime::cpu::CpuIsa::Avx2, depth);
      EXPECT_EQ(avx2_rows, codegen::kF32GemvRows);
      EXPECT_TRUE(native_rows == codegen::kF32GemvRows || native_rows == codegen::kZen5F32GemvRows ||
                  native_rows == codegen::kZen5F32GemvRowsBesideAvx2Blas)
          << native_rows;
      const bool gemv = rows <= native_rows;
      EXPECT_NE(program.steps[0].what.find(gemv ? "gemv per row" : "BLAS"), std::string::npos)
          << rows << ": " << program.steps[0].what;
      const std::string block_rows =
          std::to_string(rows <= 16 ? codegen::kGemvOneStripRows : codegen::kGemvStripRows);
      if (gemv) {  // whole blocks in panels (the call's last argument: the panel's blocks)
        const std::string source = codegen::cpp::emit_kernel(codegen::lower_gemv(b.graph, product.node).kernel, "k");
        const size_t call = source.find("lm_gemv_strips<" + block_rows + ">(");
        ASSERT_NE(call, std::string::npos) << rows;
        EXPECT_NE(source.find(", lm_rows / " + block_rows + ");", call), std::string::npos) << rows;
      }
      expect_both_isas_match_the_reference(
          b.graph, {random_tensor(DType::F32, {2, rows, stride}, rng)},
          "f32 few-row gemv, rows " + std::to_string(rows) + ", depth " + std::to_string(depth),
          3e-7 * static_cast<double>(depth), weights,  // f32 rounding of `depth` products
          /*same_bits=*/(rows <= native_rows) == (rows <= avx2_rows));
    }
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {2, 3, 70});
  auto w = b.weight("w", DType::F32, {37, 70});
  const TensorRef repeated = b.matmul(x, viewed(w, w.view.permute({1, 0}).unsqueeze(0).expand({2, 70, 37})));
  b.output(repeated);
  EXPECT_FALSE(passes::is_gemv(b.graph, b.graph.node(repeated.node), {.f32 = codegen::kF32GemvRows}));
  const TensorRef one = b.matmul(viewed(x, x.view.slice(0, Expr(int64_t{0}), Expr(int64_t{1}), 1)),
                                 viewed(w, w.view.permute({1, 0}).unsqueeze(0)));
  EXPECT_TRUE(passes::is_gemv(b.graph, b.graph.node(one.node), {.f32 = codegen::kF32GemvRows}));
  // Where f32_values bounds rows x K: 512 rows of depth 8,192 fill it, 513 do not fit, nor do any
  // of an unknown depth; without the bound, any depth.
  const passes::GemvRows wide{.f32 = codegen::kZen5F32GemvRowsBesideAvx2Blas,
                              .f32_values = codegen::kZen5F32StripValues};
  const auto product_of = [&](Expr rows, Expr depth) {
    IrTestBuilder p;
    auto a = p.input("a", DType::F32, {rows, depth});
    auto weight = p.weight("w", DType::F32, {16, depth});
    const TensorRef out = p.matmul(a, viewed(weight, weight.view.permute({1, 0})));
    return std::pair{p, out.node};
  };
  for (auto [rows, depth, expected] : {std::tuple{int64_t{512}, int64_t{8192}, true},
                                       std::tuple{int64_t{513}, int64_t{8192}, false},
                                       std::tuple{int64_t{1024}, int64_t{4096}, true},
                                       std::tuple{int64_t{1025}, int64_t{64}, false}}) {
    auto [p, node] = product_of(Expr(rows), Expr(depth));
    EXPECT_EQ(passes::is_gemv(p.graph, p.graph.node(node), wide), expected) << rows << " x " << depth;
    EXPECT_EQ(passes::is_gemv(p.graph, p.graph.node(node), {.f32 = codegen::kZen5F32GemvRowsBesideAvx2Blas}),
              rows <= codegen::kZen5F32GemvRowsBesideAvx2Blas)
        << rows << " x " << depth;
  }
  auto [unknown, node] = product_of(Expr(int64_t{2}), Expr::symbol("k"));
  EXPECT_FALSE(passes::is_gemv(unknown.graph, unknown.graph.node(node), wide));
  EXPECT_TRUE(passes::is_gemv(unknown.graph, unknown.graph.node(node), {.f32 = codegen::kF32GemvRows}));
}

TEST(Fusion, F32GemmOfSymbolicRowsRunsTheStripGemvForAFewRows) {
  // A dynamic-shape prefill's Linear: M is a symbol, so which kernel serves a call is decided when
  // its rows are known. One program: BLAS, with the strip GEMV for calls of at most
  // kF32GemvRows rows (more on a Zen 5, cpu_gemv_rows; the kernel checks the rows
  // against its capacity, symbolic_gemv_rows). Rows 1, within a strip, across strips, at either
  // limit and past it, through both ISAs' builds (the same bits where both take the same path).
  std::mt19937 rng(16);
  const Expr s = Expr::symbol("s0");
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {s, 90});
  auto w = b.weight("w", DType::F32, {37, 90});
  const TensorRef product = b.matmul(x, viewed(w, w.view.permute({1, 0})));
  b.output(product);
  EXPECT_TRUE(passes::is_gemv_for_few_rows(b.graph, b.graph.node(product.node)));
  HostTensor weight = random_tensor(DType::F32, {37, 90}, rng);
  std::map<std::string, runtime::BufferRef> weights{{"w", weight.ref()}};
  auto exe = compile_cpu(b.graph, weights);
  const auto& program = program_of(*exe);
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.steps[0].kind, runtime::cpu::Step::Kind::Gemm);
  ASSERT_NE(program.steps[0].few_rows, nullptr);
  EXPECT_NE(program.steps[0].few_rows->what.find("gemv per row"), std::string::npos) << program.steps[0].few_rows->what;
  const int64_t native_rows = f32_strip_rows(runtime::cpu::CpuIsa::Native, 90);
  EXPECT_NE(program.steps[0].what.find("for up to " + std::to_string(native_rows) + " rows"), std::string::npos)
      << program.steps[0].what;
  for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{17}, int64_t{40}, codegen::kF32GemvRows,
                       codegen::kF32GemvRows + 1, int64_t{150}, codegen::kZen5F32GemvRows,
                       codegen::kZen5F32GemvRows + 1, codegen::kZen5F32GemvRowsBesideAvx2Blas,
                       codegen::kZen5F32GemvRowsBesideAvx2Blas + 1})
    expect_both_isas_match_the_reference(b.graph, {random_tensor(DType::F32, {rows, 90}, rng)},
                                         "f32 gemm of symbolic rows, " + std::to_string(rows), 3e-7 * 90, weights,
                                         /*same_bits=*/(rows <= native_rows) == (rows <= codegen::kF32GemvRows));
  // bf16 keeps ATen alone but where the CPU multiplies bf16 pairs (bf16_pair_rows > 1; a constant
  // M is is_bf16_pair_gemv's); a weight repeated over a batch dim keeps BLAS alone.
  IrTestBuilder half;
  auto hx = half.input("x", DType::BF16, {s, 90});
  auto hw = half.weight("w", DType::BF16, {37, 90});
  const TensorRef half_product = half.matmul(hx, viewed(hw, hw.view.permute({1, 0})));
  EXPECT_FALSE(passes::is_gemv_for_few_rows(half.graph, half.graph.node(half_product.node)));
  EXPECT_TRUE(passes::is_gemv_for_few_rows(half.graph, half.graph.node(half_product.node), codegen::kBf16PairGemvRows));
  const TensorRef half_constant = half.matmul(half.input("y", DType::BF16, {5, 90}), viewed(hw, hw.view.permute({1, 0})));
  EXPECT_FALSE(passes::is_gemv_for_few_rows(half.graph, half.graph.node(half_constant.node), codegen::kBf16PairGemvRows));
  IrTestBuilder batched;
  auto bx = batched.input("x", DType::F32, {2, s, 90});
  auto bw = batched.weight("w", DType::F32, {37, 90});
  const TensorRef repeated =
      batched.matmul(bx, viewed(bw, bw.view.permute({1, 0}).unsqueeze(0).expand({2, 90, 37})));
  EXPECT_FALSE(passes::is_gemv_for_few_rows(batched.graph, batched.graph.node(repeated.node)));
}

TEST(Fusion, HalfGemmWidensTheWeightInStorageOrder) {
  // A bf16 prefill Linear of more rows than the GEMV takes goes through f32 BLAS; the weight is
  // widened in its own row-major order and read transposed by BLAS, not transposed by a strided
  // Cast kernel.
  constexpr int64_t kRows = codegen::kHalfGemvRows + 4;
  IrTestBuilder b;
  auto x = b.input("x", DType::BF16, {kRows, 64});
  auto w = b.weight("w", DType::BF16, {48, 64});
  b.output(b.matmul(x, viewed(w, w.view.permute({1, 0}))));
  const ir::Graph legal = passes::legalize_matmul(b.graph, {}, {.half = codegen::kHalfGemvRows, .f32 = codegen::kF32GemvRows});
  int casts = 0;
  for (size_t i = 0; i < legal.size(); ++i) {
    const ir::Node& node = legal.node(static_cast<ir::NodeId>(i));
    if (node.op != ir::Op::Cast || legal.node(node.inputs[0].node).op != ir::Op::Weight) continue;
    ++casts;
    EXPECT_TRUE(node.inputs[0].view.is_contiguous());
    EXPECT_EQ(node.shape, (ir::Shape{Expr(int64_t{48}), Expr(int64_t{64})}));
  }
  EXPECT_EQ(casts, 1);
  std::mt19937 rng(12);
  HostTensor weight = random_tensor(DType::BF16, {48, 64}, rng);
  expect_matches_reference(b.graph, {random_tensor(DType::BF16, {kRows, 64}, rng)}, "bf16 gemm", -1,
                           {{"w", weight.ref()}});
}

TEST(Fusion, HalfPrecisionStoreRoundsOnce) {
  // A stored half-precision result is rounded by the store alone: exp(x) in f32 cast back, and
  // a half-precision product (whose cast operand, read by the product, still rounds).
  for (DType half : {DType::BF16, DType::F16}) {
    const std::string round = half == DType::BF16 ? "lm_rbf(" : "lm_rh(";
    IrTestBuilder b;
    auto x = b.input("x", half, {3, 70});
    auto e = b.unary(Op::Exp, b.unary(Op::Cast, x, DType::F32));
    b.output(b.unary(Op::Cast, e, half));
    b.output(b.binary(Op::Mul, b.unary(Op::Cast, e, half), x));
    const std::string source = only_kernel_source(b.graph);
    // Once in the scalar loop, and once in the bf16 lane loop where the build has one.
    const size_t loops = source.find("lm_store_lanes_bf16(") != std::string::npos ? 2 : 1;
    EXPECT_EQ(count(source, round), loops) << source;
    std::mt19937 rng(13);
    expect_matches_reference(b.graph, {random_tensor(half, {3, 70}, rng)}, "half-precision stores");
  }
}

TEST(Fusion, ExpOfMinusInfinityStaysOnTheVectorPath) {
  // A causal softmax exponentiates -inf for every masked score; the kernel calls lm_expf, whose
  // -inf lanes never reach libmvec's scalar fallback, and the values match the reference.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {4, 37});
  b.output(b.unary(Op::Exp, x));
  EXPECT_NE(only_kernel_source(b.graph).find("lm_expf("), std::string::npos);
  const float specials[] = {-INFINITY, -1e30f, -104.5f, -103.9f, -90.f, -87.4f, -87.f, -1.f, 0.f, 3.f, 88.7f, INFINITY, NAN};
  std::vector<float> values(4 * 37);
  for (size_t i = 0; i < values.size(); ++i) values[i] = specials[i % 13];
  expect_matches_reference(b.graph, {HostTensor::of(DType::F32, {4, 37}, values)}, "exp specials");
}

TEST(Fusion, ClampedGatherAlongTheInnerDimIsSplitNotChecked) {
  // cat as the translator writes it for two pieces of x's last dim, swapped: positions clamped
  // into each piece, a select on position < 5. The positions are proved in range (no bounds
  // check, so the loop may vectorise) and the inner loop is split where the select flips, so
  // the compiler folds the clamps into affine loads.
  IrTestBuilder b;
  const ir::Shape shape = {3, 12};
  auto x = b.input("x", DType::F32, shape);
  auto lit = [&](int64_t v) { return b.constant(ir::Scalar::of_int(v), DType::I64, shape); };
  auto position = b.iota(1, DType::I64, shape);
  auto tail = viewed(x, x.view.slice(1, Expr(7), Expr(12), 1));
  auto head = viewed(x, x.view.slice(1, Expr(0), Expr(7), 1));
  auto first = b.gather(tail, b.binary(Op::Min, position, lit(4)), 1);
  auto second = b.gather(head, b.binary(Op::Max, b.binary(Op::Sub, position, lit(5)), lit(0)), 1);
  b.output(b.binary(Op::Mul, b.where(b.binary(Op::Lt, position, lit(5)), first, second), x));
  const std::string source = only_kernel_source(b.graph);
  EXPECT_EQ(count(source, "lm_info[0]"), 0u) << "no bounds check:\n" << source;
  EXPECT_EQ(count(source, "for (int64_t i1 = INT64_C(0); i1 < INT64_C(5)"), 1u) << source;
  EXPECT_EQ(count(source, "for (int64_t i1 = INT64_C(5); i1 < INT64_C(12)"), 1u) << source;
  EXPECT_EQ(count(source, "#pragma omp simd"), 2u) << source;
  std::mt19937 rng(21);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {3, 12}, rng)}, "clamped gathers");
}

TEST(Fusion, GatherThatMayLeaveItsAxisKeepsTheBoundsCheck) {
  // Clamped on one side only: the position can reach the extent, so the check stays.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {3, 6});
  auto position = b.iota(1, DType::I64, {3, 8});
  auto gathered = b.gather(x, b.binary(Op::Max, position, b.constant(ir::Scalar::of_int(1), DType::I64, {3, 8})), 1);
  b.output(gathered);
  EXPECT_NE(only_kernel_source(b.graph).find("lm_info[0]"), std::string::npos);
}

TEST(Fusion, ScanIsOneSequentialLoopAlongItsAxis) {
  // A CumSum over the middle dim of [7, 13, 5]: a work item is one of the 35 rows, its indices
  // split from the item, and the axis is one loop carrying the running sum in the accumulator
  // of ir::scan_accumulator, stored converted at every element. No simd: the sum is sequential.
  struct Case {
    DType dtype;
    std::string accumulator, store;
  };
  for (const Case& c : {Case{DType::F32, "double lm_sum = 0;", "] = (float)(lm_sum);"},
                        Case{DType::BF16, "float lm_sum = 0;", "] = lm_f2bf(lm_sum);"},
                        Case{DType::I8, "uint64_t lm_sum = 0;", "] = (int8_t)((int64_t)lm_sum);"}}) {
    IrTestBuilder b;
    b.output(b.cumsum(b.input("x", c.dtype, {7, 13, 5}), 1));
    const codegen::LoweredKernel lowered = codegen::lower_scan(b.graph, b.graph.outputs()[0].node);
    EXPECT_EQ(lowered.kernel.parallel_extent(), Expr(int64_t{35}));
    EXPECT_EQ(lowered.kernel.inner_extent(), Expr(int64_t{13}));
    const std::string source = codegen::cpp::emit_kernel(lowered.kernel, "k");
    EXPECT_EQ(count(source, "for (int64_t"), 2u) << "the work items and the axis:\n" << source;
    EXPECT_EQ(count(source, "for (int64_t i1 = 0; i1 < INT64_C(13); ++i1) {"), 1u) << source;
    EXPECT_NE(source.find("const int64_t i2 = lm_r % INT64_C(5); lm_r /= INT64_C(5);"), std::string::npos) << source;
    EXPECT_NE(source.find("const int64_t i0 = lm_r;"), std::string::npos) << source;
    EXPECT_EQ(count(source, c.accumulator), 1u) << source;
    EXPECT_EQ(count(source, c.store), 1u) << source;
    EXPECT_EQ(count(source, "#pragma omp simd"), 0u) << source;
  }
}

TEST(Fusion, ScanIsItsOwnKernelBetweenFusedNeighbours) {
  // position ids from a padding mask, as transformers writes them: cumsum(mask) * mask - 1 over
  // an i64 cast of the mask. The cast before the scan is one kernel, the scan another, and the
  // multiply-subtract after it a third that reads the scan's buffer.
  IrTestBuilder b;
  const ir::Shape shape = {3, 37};
  auto mask = b.unary(Op::Cast, b.input("mask", DType::Bool, shape), DType::I64);
  auto positions = b.cumsum(mask, 1);
  b.output(b.binary(Op::Sub, b.binary(Op::Mul, positions, mask), b.constant(ir::Scalar::of_int(1), DType::I64, shape)));
  auto exe = compile_cpu(b.graph);
  const auto& program = program_of(*exe);
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_EQ(program.kernel_count, 3u);
  EXPECT_NE(program.steps[1].what.find("cumsum along axis 1"), std::string::npos) << program.steps[1].what;
  const int scan_output = program.steps[1].slots.back();
  const std::vector<int>& reads = program.steps[2].slots;
  EXPECT_NE(std::find(reads.begin(), reads.end(), scan_output), reads.end()) << "the last kernel reads the scan";
  std::mt19937 rng(22);
  expect_matches_reference(b.graph, {random_tensor(DType::Bool, {3, 37}, rng)}, "cumsum between kernels");
}

ir::Graph cache_test_graph() {
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {3, 77});
  b.output(b.unary(Op::Tanh, b.binary(Op::Mul, x, b.constant(1.25, DType::F32, {3, 77}))));
  return b.graph;
}

// Runs only inside the child process that CpuCache.SecondProcessCompilesNothing starts.
TEST(CpuCacheChild, CompileInto) {
  const char* dir = std::getenv("LUMINAL_TEST_CHILD_CACHE");
  if (dir == nullptr) GTEST_SKIP() << "helper for CpuCache.SecondProcessCompilesNothing";
  runtime::CompileOptions options;
  options.cache_dir = dir;
  auto exe = compile_cpu(cache_test_graph(), {}, options);
  EXPECT_EQ(program_of(*exe).jit.compiled, 1);
}

TEST(CpuCache, SecondProcessCompilesNothing) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("luminal-cache-test-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  const std::string env = "LUMINAL_TEST_CHILD_CACHE=" + dir;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(const_cast<char*>(env.c_str()));
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=CpuCacheChild.CompileInto";
  char self[] = "/proc/self/exe";
  char* argv[] = {self, filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child compile failed";
  runtime::CompileOptions options;
  options.cache_dir = dir;
  auto exe = compile_cpu(cache_test_graph(), {}, options);
  EXPECT_EQ(program_of(*exe).jit.compiled, 0) << "the second process compiled again";
  std::mt19937 rng(7);
  std::vector<HostTensor> in = {random_tensor(DType::F32, {3, 77}, rng)};
  std::vector<HostTensor> ref_in = in;
  expect_same(run_executable(*exe, cache_test_graph(), in)[0], run_reference(cache_test_graph(), ref_in)[0], 1e-5, "cached");
  std::filesystem::remove_all(dir);
}

TEST(CpuIsa, Avx2BuildsKernelsWithoutAvx512AndCachesThemApart) {
  // The kernels see __AVX512F__ where the CPU has it, unless cpu_isa is "avx2"; the two builds
  // are distinct cache entries. An unknown name is the user's error, naming the valid ones.
  const std::string source =
      "extern \"C\" int64_t lm_isa(void* const*, const int64_t*, int64_t, int64_t, int64_t*) {\n"
      "#if defined(__AVX512F__)\n  return 512;\n#else\n  return 256;\n#endif\n}\n";
  const int64_t native_width = __builtin_cpu_supports("avx512f") ? 512 : 256;
  for (const auto& [isa, width] : {std::pair{runtime::cpu::CpuIsa::Native, native_width},
                                   std::pair{runtime::cpu::CpuIsa::Avx2, int64_t{256}}}) {
    runtime::cpu::JitOptions options;
    options.cache_dir = test_cache_dir();
    options.isa = isa;
    runtime::cpu::JitStats stats;
    const auto library = runtime::cpu::build_kernels({"lm_isa"}, {source}, options, stats);
    EXPECT_EQ(library->function("lm_isa")(nullptr, nullptr, 0, 0, nullptr), width);
  }
  EXPECT_THROW(runtime::cpu::parse_cpu_isa("avx512"), UserError);
}

// `function` of each of x, a prelude function run as a vectorised kernel runs it, built for both
// ISAs: the native build's results, checked to be bit-identical to the AVX2 build's.
std::vector<float> prelude_function_on_both_isas(const std::string& function, const std::vector<float>& x) {
  const std::string source =
      "extern \"C\" int64_t lm_apply(void* const* p, const int64_t*, int64_t begin, int64_t end, int64_t*) {\n"
      "  const float* x = (const float*)p[0];\n  float* y = (float*)p[1];\n"
      "#pragma omp simd\n  for (int64_t i = begin; i < end; ++i) y[i] = " +
      function + "(x[i]);\n  return 0;\n}\n";
  std::vector<std::vector<float>> results;
  for (runtime::cpu::CpuIsa isa : {runtime::cpu::CpuIsa::Native, runtime::cpu::CpuIsa::Avx2}) {
    runtime::cpu::JitOptions options;
    options.cache_dir = test_cache_dir();
    options.isa = isa;
    runtime::cpu::JitStats stats;
    const auto library = runtime::cpu::build_kernels({"lm_apply"}, {source}, options, stats);
    std::vector<float> y(x.size());
    void* params[] = {const_cast<float*>(x.data()), y.data()};
    library->function("lm_apply")(params, nullptr, 0, static_cast<int64_t>(x.size()), nullptr);
    results.push_back(y);
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), x.size() * sizeof(float)), 0)
      << function << ": the ISAs differ";
  return results[0];
}

TEST(CpuIsa, AttentionsExpIsWithinOneUlpOfExpfOnBothIsas) {
  // lm_softmax_expf (codegen/cpp/prelude.cpp), vectorised as attention's softmax runs it, on every
  // 61st float from ln(FLT_MIN) up to 0 and the edges: 0 below ln(FLT_MIN), NaN stays NaN.
  std::vector<float> x = {0.0f, -0.0f, -1e-30f, -87.3f, -87.34f, -88.0f, -1000.0f, -INFINITY, NAN};
  for (float v = -87.33f; v < 0.0f; v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) - 61)) x.push_back(v);
  const std::vector<float> y = prelude_function_on_both_isas("lm_softmax_expf", x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (x[i] < -87.33655f) {
      EXPECT_EQ(y[i], 0.0f) << x[i];
    } else {
      const float want = std::exp(x[i]);
      const int64_t ulps = std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(y[i])) - std::bit_cast<int32_t>(want));
      ASSERT_LE(ulps, 1) << "exp(" << x[i] << ") = " << y[i] << ", expf " << want;
    }
  }
}

TEST(CpuIsa, ExpIsWithinOneUlpOfExpOnBothIsas) {
  // lm_expf (codegen/cpp/prelude.cpp), vectorised as an Exp kernel runs it, on every 4,099th bit
  // pattern of all floats (both signs, denormals, infinities, NaNs) and the edges: +inf above
  // ~88.72, denormals down to ~-103.97, 0 below, NaN stays NaN.
  std::vector<float> x = {0.0f, -0.0f, 88.72f, 88.73f, 89.0f, 1e30f, -87.34f, -100.0f, -103.9f, -103.98f, -104.0f,
                          -1e30f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f};
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) x.push_back(std::bit_cast<float>(uint32_t(bits)));
  const std::vector<float> y = prelude_function_on_both_isas("lm_expf", x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << x[i];
      continue;
    }
    const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
    const int64_t ulps = std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(y[i])) - std::bit_cast<int32_t>(want));
    ASSERT_LE(ulps, 1) << "exp(" << x[i] << ") = " << y[i] << ", correctly rounded " << want;
  }
}

TEST(CpuIsa, ErfIsWithinOneUlpOfErfOnBothIsas) {
  // lm_erff (codegen/cpp/prelude.cpp), vectorised as an Erf kernel runs it, on every 4,099th bit
  // pattern of all floats and the edges of its two halves: +-1 from 4 on, odd, NaN stays NaN.
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, std::nextafter(1.0f, 0.0f), 3.9f, 4.0f, 4.5f, 1e30f,
                          INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f};
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) x.push_back(std::bit_cast<float>(uint32_t(bits)));
  const std::vector<float> y = prelude_function_on_both_isas("lm_erff", x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << x[i];
      continue;
    }
    const float want = static_cast<float>(std::erf(static_cast<double>(x[i])));
    const int64_t ulps = std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(y[i])) - std::bit_cast<int32_t>(want));
    ASSERT_LE(ulps, 1) << "erf(" << x[i] << ") = " << y[i] << ", correctly rounded " << want;
  }
}

TEST(CpuDebug, DebugDirHasPassesKernelsAndStats) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("luminal-debug-test-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  runtime::CompileOptions options;
  options.debug_dir = dir;
  compile_cpu(cache_test_graph(), {}, options);
  bool kernels = false;
  for (const auto& e : std::filesystem::directory_iterator(dir)) kernels = kernels || e.path().extension() == ".cpp";
  EXPECT_TRUE(kernels);
  // input, quantized_weights (the cpu runtime runs it), gathers_before_pointwise, dead_code,
  // legalize_matmul, fuse.
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "5_fuse.txt"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / "cpu_stats.txt"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace luminal::testing
