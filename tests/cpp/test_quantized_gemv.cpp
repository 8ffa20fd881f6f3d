// Weight-only quantized Linears at decode time: per-channel int8 (passes/quantized_weights.h)
// and per-group int4/int8 (passes/group_quantized_gemv.h). The GEMV reads the int8 weight and
// dequantizes it in registers instead of kernels making a float copy per call. Checked against
// the reference runtime, which runs the dequantizing ops and an f32/bf16 matmul, over odd sizes,
// the whole int8 range, a batch broadcast, bf16 activations and every GEMV tile.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "cpu_test_util.h"
#include "codegen/kernel.h"
#include "runtime/cpu/build_program.h"

namespace luminal::testing {
namespace {

// Values in [lo, hi]: the whole int8 range by default, [-8, 7] for torchao's int4.
HostTensor int8_weight(int64_t rows, int64_t cols, std::mt19937& rng, int lo = -128, int hi = 127) {
  HostTensor t = HostTensor::zeros(DType::I8, {rows, cols});
  std::uniform_int_distribution<int> values(lo, hi);
  for (auto& byte : t.bytes) byte = static_cast<std::byte>(static_cast<int8_t>(values(rng)));
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

// The most rows of an f32 prompt through a quantized weight that the strips GEMV takes with this
// machine's kernels (kF32GemvRows, kZen5QuantizedF32GemvRows on a Zen 5: cpu_gemv_rows).
int64_t quantized_f32_strip_rows() {
  return runtime::cpu::cpu_gemv_rows(runtime::cpu::CpuIsa::Native, {}).quantized_f32;
}

// f32 prompt rows up to the strips' limit: `rows`, then 100 and the limit itself where the limit
// is past kF32GemvRows (whose prompts both ISAs run in the strips).
std::vector<int64_t> with_wider_f32_strips(std::vector<int64_t> rows) {
  if (quantized_f32_strip_rows() > codegen::kF32GemvRows) {
    rows.push_back(100);
    rows.push_back(quantized_f32_strip_rows());
  }
  return rows;
}

const runtime::cpu::Step* gemv_step(const runtime::cpu::Program& program) {
  for (const runtime::cpu::Step& step : program.steps)
    if (step.what.find("gemv") != std::string::npos) return &step;
  return nullptr;
}

TEST(QuantizedGemv, ReadsTheInt8WeightAndMatchesTheReference) {
  std::mt19937 rng(5);
  for (DType t : {DType::F32, DType::BF16}) {
    // Depths: a scalar tail, whole blocks, and (53) a lone vector step after the paired ones.
    for (auto [n, k, batch] :
         {std::tuple<int64_t, int64_t, int64_t>{13, 37, 1}, {64, 256, 1}, {37, 70, 3}, {11, 53, 1}, {6, 24, 1}}) {
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
      // AVX-512 widens sixteen weights per step, AVX2 two halves of eight: the same sums.
      expect_both_isas_match_the_reference(graph, {random_tensor(t, batch > 1 ? std::vector<int64_t>{batch, 1, k}
                                                                               : std::vector<int64_t>{1, k},
                                                                 rng)},
                                           what, t == DType::F32 ? 1e-4 : 2e-2, weights);
    }
  }
}

// group_quantized_linear's weights, drawn in this order: q [n, groups * group] and zero points
// [n, groups] with values in [lo, hi], positive scales [n, groups] of dtype t.
struct GroupQuantizedWeights {
  HostTensor q, zero, scale;
  GroupQuantizedWeights(DType t, int64_t n, int64_t groups, int64_t group, std::mt19937& rng, int lo, int hi)
      : q(int8_weight(n, groups * group, rng, lo, hi)),
        zero(int8_weight(n, groups, rng, lo, hi)),
        scale(random_tensor(t, {n, groups}, rng, /*positive=*/true)) {}
  std::map<std::string, runtime::BufferRef> bound(bool zero_points) {
    std::map<std::string, runtime::BufferRef> weights = {{"q", q.ref()}, {"scale", scale.ref()}};
    if (zero_points) weights["zero"] = zero.ref();
    return weights;
  }
};

std::string group_case(int64_t n, int64_t groups, int64_t group, bool zero_points) {
  return std::to_string(n) + "x" + std::to_string(groups) + "x" + std::to_string(group) +
         (zero_points ? " with zero points" : "");
}

TEST(QuantizedGemv, DequantizesPerGroupInRegistersAndMatchesTheReference) {
  std::mt19937 rng(7);
  for (DType t : {DType::F32, DType::BF16}) {
    // Groups of 32 (torchao's int4 default), whole vectors of 8, and 12 (the scalar path);
    // rows that are and are not a multiple of the tile.
    // Group counts that the kernel's steps of four (f32) and two (bf16) groups divide and do not.
    // 20 groups of 32: a bf16 row's scales are read sixteen groups at a time where whole.
    for (auto [n, groups, group] : {std::tuple<int64_t, int64_t, int64_t>{13, 4, 32}, {64, 8, 32}, {9, 3, 8},
                                    {7, 5, 12}, {5, 5, 8}, {6, 6, 16}, {8, 20, 32}}) {
      for (bool zero_points : {true, false}) {
        const ir::Graph graph = group_quantized_linear(t, n, groups, group, zero_points);
        GroupQuantizedWeights drawn(t, n, groups, group, rng, -128, 127);
        const std::map<std::string, runtime::BufferRef> weights = drawn.bound(zero_points);
        const std::string what = std::string(ir::dtype_name(t)) + " " + group_case(n, groups, group, zero_points);
        runtime::CompileOptions options;
        options.cache_dir = test_cache_dir();
        const runtime::cpu::Program program = runtime::cpu::build_program(graph, options);
        // One kernel: the GEMV reads q itself; nothing dequantizes the weight into a buffer.
        ASSERT_EQ(program.steps.size(), 1u) << what;
        const runtime::cpu::Step* gemv = gemv_step(program);
        ASSERT_NE(gemv, nullptr) << what;
        EXPECT_NE(gemv->what.find("per group of " + std::to_string(group)), std::string::npos) << gemv->what;
        EXPECT_EQ(program.slots[gemv->slots[1]].node, 1) << what << ": the GEMV's weight is not q";
        // bf16: each weight is rounded to bf16 as the reference's Mul rounds it. f32 groups of
        // 16 and 32 are summed in sixteen lanes with AVX-512, in another order than AVX2's eight,
        // and so are bf16 groups of 32 with AVX512-BF16 (in bf16 pairs, vdpbf16ps).
        expect_both_isas_match_the_reference(graph, {random_tensor(t, {1, groups * group}, rng)}, what,
                                             t == DType::F32 ? 1e-4 : 2e-2, weights,
                                             /*same_bits=*/t != DType::F32 && group % 32 != 0);
      }
    }
  }
}

// Every bf16 weight is (q - zero) * scale rounded to bf16, as the reference's bf16 Mul rounds it,
// before its product: checked weight by weight (an `a` of one nonzero element, 1 + 2^-7, reads
// out one column of the dequantized weight times it; the product is exact in f32, so the output
// is that product rounded once, and an unrounded weight's product rounds elsewhere), for all int8
// q and zero points and scales of either sign from 2^-40 to 2^118, across the kernel's two forms
// (its floating-point split below |scale| 2^102, the integer rounding above; with AVX512-BF16 for
// groups of 32, one FMA below 2^102 and a subtraction and product above, each rounded by
// vcvtne2ps2bf16) and the scalar path of groups that are not whole vectors. Sums of all-equal
// weights tell them apart too. int4 values (torchao's, in [-8, 8)) with scales below 2^102 take
// the table lookup in groups of 32 (with AVX512-BF16): every table of sixteen groups, or a last
// one of 1 or 11, whose rows are all int4 values; a few bytes out of that range (8, -9, 127) send
// their tables, and only theirs, back to the FMA form.
TEST(QuantizedGemv, EachBf16GroupedWeightIsRoundedToBf16BeforeItsProduct) {
  constexpr float kReadOut = 1.0078125f;
  std::mt19937 rng(11);
  // 17 groups of 32: a table of sixteen groups' scales made at once (with AVX512-BF16), then one.
  struct Case {
    int64_t groups, group;
    int lo, hi, max_exponent;
  };
  for (auto [groups, group, lo, hi, max_exponent] :
       {Case{11, 32, -128, 127, 118}, Case{17, 32, -128, 127, 118}, Case{3, 24, -128, 127, 118},
        Case{5, 8, -128, 127, 118}, Case{4, 12, -128, 127, 118}, Case{11, 32, -8, 7, 101}, Case{49, 32, -8, 7, 101}}) {
    const int64_t n = 20, k = groups * group;
    const ir::Graph graph = group_quantized_linear(DType::BF16, n, groups, group, /*zero_points=*/true);
    GroupQuantizedWeights drawn(DType::BF16, n, groups, group, rng, lo, hi);
    if (groups == 49)  // out of int4's range: in the second table of row 3 and the third of row 12
      for (auto [row, column, value] : {std::tuple<int64_t, int64_t, int8_t>{3, 16 * 32 + 5, 8}, {12, 32 * 32, -9},
                                        {12, 40 * 32 + 31, 127}})
        drawn.q.bytes[static_cast<size_t>(row * k + column)] = static_cast<std::byte>(value);
    std::uniform_int_distribution<int> exponent(127 - 40, 127 + max_exponent), mantissa(0, 127), sign(0, 1);
    std::vector<float> scale(static_cast<size_t>(n * groups));
    for (size_t i = 0; i < scale.size(); ++i) {
      const uint16_t bits = static_cast<uint16_t>(sign(rng) << 15 | exponent(rng) << 7 | mantissa(rng));
      std::memcpy(drawn.scale.bytes.data() + 2 * i, &bits, sizeof bits);
      scale[i] = bf16_to_float(bits);
    }
    const auto* q = reinterpret_cast<const int8_t*>(drawn.q.bytes.data());
    const auto* zero = reinterpret_cast<const int8_t*>(drawn.zero.bytes.data());
    for (const std::string isa : {"native", "avx2"}) {
      runtime::CompileOptions options;
      options.cpu_isa = isa;
      const auto executable = compile_cpu(graph, drawn.bound(true), options);
      for (int64_t column = 0; column < k; ++column) {
        std::vector<uint16_t> one_hot(static_cast<size_t>(k), 0);
        one_hot[static_cast<size_t>(column)] = float_to_bf16(kReadOut);
        std::vector<HostTensor> inputs{HostTensor::of(DType::BF16, {1, k}, one_hot)};
        const HostTensor out = run_executable(*executable, graph, inputs)[0];
        for (int64_t row = 0; row < n; ++row) {
          const int64_t g = row * groups + column / group;
          const float exact = static_cast<float>(q[row * k + column] - zero[g]) * scale[static_cast<size_t>(g)];
          const float expected = bf16_to_float(float_to_bf16(bf16_to_float(float_to_bf16(exact)) * kReadOut));
          ASSERT_EQ(element_as_double(out, static_cast<size_t>(row)), expected)
              << isa << ", " << groups << " groups of " << group << ": weight (" << row << ", " << column << "), q "
              << int{q[row * k + column]} << ", zero " << int{zero[g]} << ", scale " << scale[static_cast<size_t>(g)];
        }
      }
    }
    // All weights (4 - 1) * 1.0078125 = 3.0234375, which rounds to 3.03125: the sums of 24 and
    // 96 of them round to different bf16 outputs than the unrounded weights' sums.
    const int64_t equal_groups = group == 32 ? 3 : 24 / group;
    const ir::Graph equal = group_quantized_linear(DType::BF16, n, equal_groups, group, /*zero_points=*/true);
    HostTensor four = HostTensor::of(DType::I8, {n, equal_groups * group},
                                     std::vector<int8_t>(static_cast<size_t>(n * equal_groups * group), 4));
    const size_t per_group_count = static_cast<size_t>(n * equal_groups);
    HostTensor one = HostTensor::of(DType::I8, {n, equal_groups}, std::vector<int8_t>(per_group_count, 1));
    HostTensor scales = HostTensor::of(DType::BF16, {n, equal_groups},
                                       std::vector<uint16_t>(per_group_count, float_to_bf16(1.0078125f)));
    const std::vector<uint16_t> ones(static_cast<size_t>(equal_groups * group), float_to_bf16(1.0f));
    expect_both_isas_match_the_reference(equal, {HostTensor::of(DType::BF16, {1, equal_groups * group}, ones)},
                                         "equal weights in groups of " + std::to_string(group), 0.0,
                                         {{"q", four.ref()}, {"zero", one.ref()}, {"scale", scales.ref()}});
  }
}

// The kernel sources a CPU compile of `graph` writes, concatenated.
std::string kernel_sources(const ir::Graph& graph, const std::map<std::string, runtime::BufferRef>& weights,
                           runtime::CompileOptions options) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("luminal-quantized-gemv-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  options.debug_dir = dir.string();
  compile_cpu(graph, weights, options);
  std::string sources;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".cpp") {
      std::ifstream file(entry.path());
      sources += std::string(std::istreambuf_iterator<char>(file), {});
    }
  std::filesystem::remove_all(dir);
  return sources;
}

// With pack_int4_weights, a bf16 decode row's int4 Linear (groups of 32, rows of whole 64-value
// blocks) reads the weight's values packed two a byte, copied when the weight is bound: the same
// tables and sums as from the int8 bytes, so the same bits, with half a byte a weight held. One
// to three threads (two streams, single blocks, single rows). A rebound weight's bytes are read
// until it has stayed bound through a run, then it is packed again (none while two weights take
// turns, as when dynamo reuses a graph for several modules); one with a value outside [-8, 8) is
// never packed. Rows that are not whole blocks, and kernels without AVX512-BF16 (cpu_isa "avx2"),
// copy nothing.
TEST(QuantizedGemv, Int4PairsGiveTheBytesFormsBitsFromHalfTheBytes) {
  if (!runtime::cpu::kernels_multiply_bf16_pairs(runtime::cpu::CpuIsa::Native))
    GTEST_SKIP() << "int4 pairs are read where the kernels have AVX512-BF16";
  std::mt19937 rng(23);
  struct Case {
    int64_t n, groups;
    bool zero_points, packed;
  };
  for (auto [n, groups, zero_points, packed] :
       {Case{64, 64, true, true}, Case{13, 4, false, true}, Case{203, 6, true, true}, Case{9, 5, true, false}}) {
    const ir::Graph graph = group_quantized_linear(DType::BF16, n, groups, 32, zero_points);
    GroupQuantizedWeights drawn(DType::BF16, n, groups, 32, rng, -8, 7);
    const std::map<std::string, runtime::BufferRef> weights = drawn.bound(zero_points);
    const std::string what = "bf16 " + group_case(n, groups, 32, zero_points);
    runtime::CompileOptions pack;
    pack.pack_int4_weights = true;
    pack.cache_dir = test_cache_dir();
    const runtime::cpu::Program program = runtime::cpu::build_program(graph, pack);
    const runtime::cpu::Step* gemv = gemv_step(program);
    ASSERT_NE(gemv, nullptr) << what;
    EXPECT_EQ(gemv->what.find("int4 values read two a byte") != std::string::npos, packed) << gemv->what;
    const std::vector<HostTensor> inputs{random_tensor(DType::BF16, {1, groups * 32}, rng)};
    std::vector<HostTensor> plain_inputs = inputs;
    const HostTensor bytes_form = run_executable(*compile_cpu(graph, weights), graph, plain_inputs)[0];
    for (int threads : {1, 2, 3}) {
      runtime::CompileOptions options = pack;
      options.num_threads = threads;
      const auto executable = compile_cpu(graph, weights, options);
      EXPECT_EQ(executable->copied_weights(), packed ? std::vector<std::string>{"q"} : std::vector<std::string>{})
          << what;
      EXPECT_EQ(executable->copied_weight_bytes(), packed ? n * groups * 32 / 2 : 0) << what;
      std::vector<HostTensor> cpu_inputs = inputs;
      const std::string run = what + ", " + std::to_string(threads) + " threads";
      expect_same(run_executable(*executable, graph, cpu_inputs)[0], bytes_form, 0.0, run);
      if (!packed || threads != 2) continue;
      // A byte out of range in the last row's last block: never a copy; the bytes give the bytes
      // form's bits. Taking turns with the weight in range, neither is packed.
      HostTensor outside = drawn.q;
      outside.bytes[outside.bytes.size() - 3] = static_cast<std::byte>(int8_t{8});
      std::map<std::string, runtime::BufferRef> outside_weights = weights;
      outside_weights["q"] = outside.ref();
      std::vector<HostTensor> outside_plain_inputs = inputs;
      const HostTensor outside_bytes_form =
          run_executable(*compile_cpu(graph, outside_weights), graph, outside_plain_inputs)[0];
      for (int turn = 0; turn < 4; ++turn) {
        const bool in_range = turn % 2 == 1;
        executable->rebind_weight("q", in_range ? drawn.q.ref() : outside.ref());
        std::vector<HostTensor> turn_inputs = inputs;
        expect_same(run_executable(*executable, graph, turn_inputs)[0], in_range ? bytes_form : outside_bytes_form,
                    0.0, run + ", turn " + std::to_string(turn));
        EXPECT_EQ(executable->copied_weight_bytes(), 0) << run << ", turn " << turn;
      }
      for (int settled = 0; settled < 2; ++settled) {
        std::vector<HostTensor> again = inputs;
        expect_same(run_executable(*executable, graph, again)[0], bytes_form, 0.0, run + ", rebound in range");
      }
      EXPECT_EQ(executable->copied_weight_bytes(), n * groups * 32 / 2) << run << ": packed again once settled";
    }
    runtime::CompileOptions avx2 = pack;
    avx2.cpu_isa = "avx2";
    EXPECT_TRUE(compile_cpu(graph, weights, avx2)->copied_weights().empty()) << what;
  }
}

TEST(QuantizedGemv, AGroupedDecodeGemvReadsTwoStreamsWithTheSameSums) {
  // At batch 1 the halves of each thread's whole blocks of rows are read as two streams
  // (lm_gemv_rows_grouped_pair), the rest one block or row at a time. Each row's sums are the
  // same whichever way it is read: one to three threads split 203 rows (halves of whole blocks
  // and leftovers) and give the same bits, which match the reference. f32 groups of 32 and 16
  // (sixteen lanes with AVX-512), 8 (eight lanes) and 12 (no whole vectors: each block alone),
  // 9 groups, so a step of four groups and a lone one; bf16 (activations widened once, weights
  // rounded to bf16 each) the same sizes, 9 groups being a table of eight groups' scales and one.
  std::mt19937 rng(19);
  const int64_t n = 203, groups = 9;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t group : {32, 16, 8, 12})
      for (bool zero_points : {true, false}) {
        const ir::Graph graph = group_quantized_linear(t, n, groups, group, zero_points);
        GroupQuantizedWeights drawn(t, n, groups, group, rng, -8, 7);
        const std::map<std::string, runtime::BufferRef> weights = drawn.bound(zero_points);
        const std::string what = std::string(ir::dtype_name(t)) + " " + group_case(n, groups, group, zero_points);
        runtime::CompileOptions two_threads;
        two_threads.num_threads = 2;
        EXPECT_NE(kernel_sources(graph, weights, two_threads).find("lm_gemv_rows_grouped_pair<"), std::string::npos)
            << what;
        const std::vector<HostTensor> inputs{random_tensor(t, {1, groups * group}, rng)};
        std::vector<HostTensor> reference_inputs = inputs;
        const auto expected = run_executable(*compile_reference(graph, weights), graph, reference_inputs);
        std::vector<HostTensor> first;
        for (int threads : {1, 2, 3}) {
          runtime::CompileOptions options;
          options.num_threads = threads;
          std::vector<HostTensor> cpu_inputs = inputs;
          const auto actual = run_executable(*compile_cpu(graph, weights, options), graph, cpu_inputs);
          // bf16: the output's rounding, after sums in another order than the reference's.
          const std::string run = what + ", " + std::to_string(threads) + " threads";
          expect_same(actual[0], expected[0], t == DType::F32 ? 1e-4 : 1e-2, run);
          if (first.empty()) first = actual;
          EXPECT_TRUE(actual[0].bytes == first[0].bytes) << what << ": " << threads << " threads differ from one";
        }
      }
}

TEST(QuantizedGemv, APromptOfFewRowsDequantizesEachChunkOnceInStrips) {
  // A prompt's rows: the strip GEMV dequantizes each chunk of a block of weight rows once, as
  // torch does ((q - zero) * scale in f32; bf16: rounded to bf16), for all the rows. Groups of 48
  // over a depth of 336 (the chunk of 256 ends inside a group), 32 (a chunk's table made eight
  // groups at once, then one by one for the last chunk's two), 64 (a table of runs of 32), 12 (a
  // vector of eight and a scalar tail); f32 rows within one strip, past it and at the limit; bf16
  // rows up to kHalfGemvRows, where legalize_matmul leaves the Matmul in bf16 on a CPU without a
  // native bf16 GEMM (ATen's, absent here; more rows: APromptOfFewRowsReadsTheInt8WeightInStrips
  // and tests/quantization); f32 rows up to the CPU's limit (quantized_f32_strip_rows). f32:
  // both ISAs give the same bits up to kF32GemvRows (past it the avx2 build widens the weight);
  // bf16 on an AVX512-BF16 CPU multiplies bf16 pairs, not f32.
  std::mt19937 rng(17);
  for (DType t : {DType::F32, DType::BF16})
    for (auto [n, groups, group] :
         {std::tuple<int64_t, int64_t, int64_t>{37, 7, 48}, {13, 10, 32}, {11, 5, 64}, {9, 3, 12}})
      for (int64_t rows : t == DType::F32 ? with_wider_f32_strips({3, 16, 40, codegen::kF32GemvRows})
                                          : std::vector<int64_t>{3, codegen::kHalfGemvRows})
        for (bool zero_points : {true, false}) {
          const ir::Graph graph = group_quantized_linear(t, n, groups, group, zero_points, rows);
          // int4 values: with the whole int8 range, sums of products near 100 round by more than
          // the tolerance wherever they cancel to near 0, in either order of summation.
          GroupQuantizedWeights drawn(t, n, groups, group, rng, -8, 7);
          const std::map<std::string, runtime::BufferRef> weights = drawn.bound(zero_points);
          const std::string what = std::string(ir::dtype_name(t)) + " " + std::to_string(rows) + " rows of " +
                                   group_case(n, groups, group, zero_points);
          runtime::CompileOptions options;
          options.cache_dir = test_cache_dir();
          const runtime::cpu::Program program = runtime::cpu::build_program(graph, options);
          ASSERT_EQ(program.steps.size(), 1u) << what;
          const std::string label = "gemv per row (weight dequantized per group of " + std::to_string(group);
          EXPECT_NE(program.steps[0].what.find(label), std::string::npos) << program.steps[0].what;
          // bf16: the output's rounding, after sums in another order than the reference's.
          expect_both_isas_match_the_reference(graph, {random_tensor(t, {rows, groups * group}, rng)}, what,
                                               t == DType::F32 ? 1e-4 : 1e-2, weights,
                                               t == DType::F32 && rows <= codegen::kF32GemvRows);
        }
}

TEST(QuantizedGemv, AnIntermediateReadElsewhereKeepsTheOpsAsTheyAre) {
  // The dequantized weight is also a graph output: it must be computed, so no pattern kernel.
  const int64_t n = 8, groups = 2, group = 16, k = groups * group;
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {1, k});
  auto q = b.weight("q", DType::I8, {n, k});
  auto scale = b.weight("scale", DType::F32, {n, groups});
  auto dequantized = b.binary(Op::Mul, b.unary(Op::Cast, viewed(q, ir::View::contiguous({n, groups, group})), DType::F32),
                              viewed(scale, ir::View::contiguous({n, groups, 1}).expand({n, groups, group})));
  b.output(b.matmul(x, viewed(dequantized, ir::View::contiguous({n, k}).permute({1, 0}))));
  b.output(dequantized);
  runtime::CompileOptions options;
  options.cache_dir = test_cache_dir();
  const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
  for (const runtime::cpu::Step& step : program.steps)
    EXPECT_EQ(step.what.find("per group"), std::string::npos) << step.what;
  std::mt19937 rng(8);
  HostTensor qw = int8_weight(n, k, rng);
  HostTensor sw = random_tensor(DType::F32, {n, groups}, rng, /*positive=*/true);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {1, k}, rng)}, "shared dequantized weight", 1e-4,
                           {{"q", qw.ref()}, {"scale", sw.ref()}});
}

TEST(QuantizedGemv, Int8ActivationsTimesInt8WeightsSumExactlyInI32) {
  // aten::_int_mm as translated: Matmul i32 of both operands widened. The GEMV reads the 8-bit
  // operands; every sum is exact (the reference sums in i32), over odd depths and the full range,
  // for int8 activations and uint8 ones (torchao's form for AVX512-VNNI CPUs without AMX).
  std::mt19937 rng(9);
  // One row (decode) and several (a prefill: a GEMV per row; eight rows at a time against each
  // block of weight rows, lm_gemv_prompt_i8, then the rest one by one).
  for (DType a_dtype : {DType::I8, DType::U8})
  for (auto [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 13, 37}, {1, 64, 4096}, {1, 5, 15}, {7, 33, 70}, {1, 9, 53},
        {3, 17, 200}, {8, 13, 200}, {17, 6, 130}, {16, 9, 64}, {8, 7, 63}}) {
    IrTestBuilder b;
    auto x = b.input("x", a_dtype, {m, k});
    auto w = b.weight("w", DType::I8, {n, k});
    b.output(b.matmul(b.unary(Op::Cast, x, DType::I32),
                      b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), DType::I32)));
    HostTensor weight = int8_weight(n, k, rng);
    const std::string what = std::string(ir::dtype_name(a_dtype)) + " x int8 " + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k);
    runtime::CompileOptions options;
    options.cache_dir = test_cache_dir();
    const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
    const runtime::cpu::Step* gemv = gemv_step(program);
    ASSERT_NE(gemv, nullptr) << what;
    EXPECT_EQ(program.steps.size(), 1u) << what << ": the operands were widened into buffers first";
    // AVX-512 VNNI (vpdpbusd) where the CPU has it, AVX2's vpmaddwd otherwise: both exact.
    HostTensor activations = int8_weight(m, k, rng);  // bytes of the whole range: as uint8, 0 to 255
    activations.dtype = a_dtype;
    expect_both_isas_match_the_reference(b.graph, {activations}, what, 0, {{"w", weight.ref()}});
  }
}

// torchao's _int_mm on an AVX512-VNNI CPU without AMX, as translated: (x + 128) as uint8 times
// the int8 weight, minus 128 times the weight's column sums (a second pass over the weight per
// call). The pass folds it into x times the weight: one GEMV reading x and the weight, exact.
// With any other offset the graph stays as it is, and exact too.
TEST(QuantizedGemv, UnsignedActivationsFoldBackIntoTheInt8Product) {
  std::mt19937 rng(13);
  for (int64_t offset : {128, 127})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 24, 200}, {5, 17, 70}}) {
      IrTestBuilder b;
      auto x = b.input("x", DType::I8, {m, k});
      auto w = b.weight("w", DType::I8, {n, k});
      auto scalar = [&](int64_t value, const ir::Shape& shape) {
        return viewed(b.constant(ir::Scalar::of_int(value), DType::I32, {}), ir::View::contiguous({}).expand(shape));
      };
      auto shifted = b.binary(Op::Add, b.unary(Op::Cast, x, DType::I32), scalar(offset, {m, k}));
      auto unsigned_x = b.unary(Op::Cast, b.unary(Op::Cast, shifted, DType::U8), DType::I32);
      auto transposed = [&] { return b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), DType::I32); };
      auto product = b.matmul(unsigned_x, transposed());
      auto column_sums = b.binary(Op::Mul, b.reduce(Op::SumReduce, transposed(), 0), scalar(128, {1, n}));
      b.output(b.binary(Op::Sub, product, viewed(column_sums, column_sums.view.expand({m, n}))));
      HostTensor weight = int8_weight(n, k, rng);
      const std::string what = "offset " + std::to_string(offset) + ", " + std::to_string(m) + "x" +
                               std::to_string(n) + "x" + std::to_string(k);
      runtime::CompileOptions options;
      options.cache_dir = test_cache_dir();
      const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
      if (offset == 128) {
        EXPECT_EQ(program.steps.size(), 1u) << what << ": the column sums were not folded away";
        const runtime::cpu::Step* gemv = gemv_step(program);
        ASSERT_NE(gemv, nullptr) << what;
        EXPECT_EQ(program.slots[gemv->slots[0]].node, x.node) << what << ": the GEMV does not read x itself";
      } else {
        EXPECT_GT(program.steps.size(), 1u) << what << ": folded with an offset other than 128";
      }
      expect_both_isas_match_the_reference(b.graph, {int8_weight(m, k, rng)}, what, 0, {{"w", weight.ref()}});
    }
}

TEST(QuantizedGemv, AWeightWidenedWholeThenTransposedIsReadAsInt8) {
  // F.linear(x, w.to(f32)): the Cast widens w in its own layout and the matmul reads it
  // transposed; the GEMV reads w through that view.
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {1, 40});
  auto w = b.weight("w", DType::I8, {24, 40});
  auto widened = b.unary(Op::Cast, w, DType::F32);
  b.output(b.matmul(x, viewed(widened, widened.view.permute({1, 0}))));
  runtime::CompileOptions options;
  options.cache_dir = test_cache_dir();
  const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
  ASSERT_EQ(program.steps.size(), 1u);
  EXPECT_EQ(program.graph.node(program.slots[program.steps[0].slots[1]].node).dtype, DType::I8);
  std::mt19937 rng(10);
  HostTensor weight = int8_weight(24, 40, rng);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {1, 40}, rng)}, "cast then transposed", 1e-4,
                           {{"w", weight.ref()}});
}

TEST(QuantizedGemv, APromptOfFewRowsReadsTheInt8WeightInStrips) {
  // A prompt of at most kF32GemvRows rows (f32: up to the CPU's limit, quantized_f32_strip_rows):
  // the strip GEMV widens each chunk of a block of weight rows once for all the rows, the int8
  // weight read in place; bf16 activations are packed as bf16 pairs (AVX512-BF16) or widened to
  // f32 once per call. Rows in a last strip of at most 8, within one strip (twelve weight rows per
  // block), past it and at the limit; 37 outputs (whole blocks, then single rows); depth 302 (a
  // chunk of 256, then 46: vectors, a scalar tail, and bf16 pairs padded to a multiple of 4); rows
  // k + 9 apart.
  std::mt19937 rng(16);
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t rows : t == DType::F32 ? with_wider_f32_strips({2, 16, 17, 40, codegen::kF32GemvRows})
                                        : std::vector<int64_t>{2, 16, 17, 40, codegen::kF32GemvRows}) {
      const int64_t n = 37, k = 302;
      IrTestBuilder b;
      auto x = b.input("x", t, {rows, k + 9});
      auto w = b.weight("w", DType::I8, {n, k});
      auto scale = b.weight("scale", t, {n});
      auto x_rows = viewed(x, x.view.slice(1, ir::Expr(int64_t{4}), ir::Expr(int64_t{4 + k}), 1));
      auto product = b.matmul(x_rows, b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), t));
      b.output(b.binary(Op::Mul, product, viewed(scale, scale.view.unsqueeze(0).expand({rows, n}))));
      const std::string what = std::string(ir::dtype_name(t)) + " " + std::to_string(rows) + " rows";
      runtime::CompileOptions options;
      options.cache_dir = test_cache_dir();
      const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
      const runtime::cpu::Step* gemv = gemv_step(program);
      ASSERT_NE(gemv, nullptr) << what;
      EXPECT_NE(gemv->what.find("gemv per row"), std::string::npos) << what << ": " << gemv->what;
      EXPECT_EQ(program.graph.node(program.slots[gemv->slots[1]].node).dtype, DType::I8) << what;
      for (const runtime::cpu::Step& step : program.steps)
        EXPECT_EQ(step.what.find("Cast"), std::string::npos) << what << ": " << step.what;
      HostTensor weight = int8_weight(n, k, rng);
      HostTensor scales = random_tensor(t, {n}, rng, /*positive=*/true);
      // Before the scale, sums of 302 products of the whole int8 range reach thousands, where f32's
      // ulp is 2.4e-4: the strips and the reference add in different orders, so outputs near 1
      // differ by up to ~1e-3 (f32: both ISAs give the same bits); bf16 outputs by their rounding.
      expect_both_isas_match_the_reference(b.graph, {random_tensor(t, {rows, k + 9}, rng)}, what,
                                           t == DType::F32 ? 2e-3 : 2e-2,
                                           {{"w", weight.ref()}, {"scale", scales.ref()}},
                                           t == DType::F32 && rows <= codegen::kF32GemvRows);
    }
}

TEST(QuantizedGemv, APerChannelScaleJoinsTheGemvsStoreWithTheMulsBits) {
  // torchao's int8 Linear: linear(x, w.to(t)) * scale.to(t), the scale an f32 weight [N, 1]
  // (cast to bf16 activations' dtype) read as [.., N] with stride 0 but along N. The GEMV rounds
  // each sum to t, multiplies it by the converted scale and rounds again in its store, so that
  // neither the Cast nor the Mul runs as a kernel: the same bits as the Mul's own kernel after
  // the GEMV (the same graph with the product also an output, which keeps both kernels), on both
  // ISAs. Decode rows (paired streams at rank 2, a batch at rank 3), prompts of a few rows
  // (strips, or rows of the row GEMV), a scale of t itself, the widening Cast of a bf16 scale
  // into f32, and 37 outputs (whole blocks and single rows). With a bias Add after the Mul (a
  // quantized Linear with a bias), the store adds it too, rounding after the Mul and the Add:
  // where the Add reads the rank-3 product as it is, the two share one pointwise kernel unfused;
  // where it reads a rank-2 product with its batch dim back ([1, rows, N], as torchao's Linear
  // returns it), the Add is a kernel of its own.
  std::mt19937 rng(31);
  const int64_t n = 37, k = 70;
  for (DType t : {DType::F32, DType::BF16})
    for (DType scale_dtype : {DType::F32, DType::BF16})
      for (std::vector<int64_t> x_shape : {std::vector<int64_t>{1, k}, {3, 1, k}, {2, k}, {17, k}})
        for (bool with_bias : {false, true}) {
          std::string what = std::string(ir::dtype_name(t)) + " x, " + ir::dtype_name(scale_dtype) + " scale, rows";
          for (int64_t d : x_shape) what += " " + std::to_string(d);
          if (with_bias) what += ", then a bias";
          HostTensor weight = int8_weight(n, k, rng);
          HostTensor scales = random_tensor(scale_dtype, {n, 1}, rng, /*positive=*/true);
          HostTensor biases = random_tensor(t, {n + 3}, rng);
          std::map<std::string, runtime::BufferRef> weights = {{"w", weight.ref()}, {"scale", scales.ref()}};
          if (with_bias) weights["bias"] = biases.ref();
          const std::vector<HostTensor> inputs = {random_tensor(t, x_shape, rng)};
          std::vector<std::vector<HostTensor>> results;  // fused, then the product also an output
          for (bool product_also_an_output : {false, true}) {
            IrTestBuilder b;
            ir::Shape shape;
            for (int64_t d : x_shape) shape.push_back(ir::Expr(d));
            auto x = b.input("x", t, shape);
            auto w = b.weight("w", DType::I8, {n, k});
            auto scale = b.weight("scale", scale_dtype, {n, 1});
            ir::View transposed = w.view.permute({1, 0});  // [K, N]
            if (x_shape.size() == 3) transposed = transposed.unsqueeze(0).expand({x_shape[0], k, n});
            auto product = b.matmul(x, b.unary(Op::Cast, viewed(w, transposed), t));
            auto converted = scale_dtype == t ? scale : b.unary(Op::Cast, scale, t);
            ir::View row = converted.view.permute({1, 0});  // [1, N]
            if (x_shape.size() == 3) row = row.unsqueeze(0);
            auto scaled = b.binary(Op::Mul, product, viewed(converted, row.expand(product.view.shape())));
            if (with_bias) {
              // The bias read from an offset: elements 2 .. n + 1 of a longer weight.
              auto bias = b.weight("bias", t, {n + 3});
              const ir::View bias_row =
                  bias.view.slice(0, ir::Expr(int64_t{2}), ir::Expr(n + 2), 1).unsqueeze(0).unsqueeze(0);
              const ir::Shape batched = x_shape.size() == 3 ? product.view.shape()
                                                            : ir::Shape{ir::Expr(int64_t{1}), shape[0], ir::Expr(n)};
              b.output(b.binary(Op::Add, viewed(scaled, ir::View::contiguous(batched)),
                                viewed(bias, bias_row.expand(batched))));
            } else {
              b.output(scaled);
            }
            if (product_also_an_output) b.output(product);
            runtime::CompileOptions options;
            options.cache_dir = test_cache_dir();
            const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
            size_t scaled_steps = 0, biased_steps = 0;
            for (const runtime::cpu::Step& step : program.steps) {
              scaled_steps += step.what.find("x per-channel scale") != std::string::npos;
              biased_steps += step.what.find("+ bias") != std::string::npos;
              if (!product_also_an_output) {
                EXPECT_EQ(step.what.find("Cast"), std::string::npos) << what << ": " << step.what;
                EXPECT_EQ(step.what.find("Mul"), std::string::npos) << what << ": " << step.what;
                EXPECT_EQ(step.what.find("Add"), std::string::npos) << what << ": " << step.what;
              }
            }
            EXPECT_EQ(scaled_steps, product_also_an_output ? 0u : 1u) << what;
            EXPECT_EQ(biased_steps, product_also_an_output || !with_bias ? 0u : 1u) << what;
            if (!product_also_an_output)
              expect_both_isas_match_the_reference(b.graph, inputs, what, t == DType::F32 ? 1e-3 : 2e-2, weights,
                                                   /*same_bits=*/false);
            std::vector<HostTensor> cpu_inputs = inputs;
            results.push_back(run_executable(*compile_cpu(b.graph, weights), b.graph, cpu_inputs));
          }
          EXPECT_TRUE(results[0][0].bytes == results[1][0].bytes) << what << ": the fused store's bits differ from the kernels'";
        }
}

TEST(QuantizedGemv, APromptBeyondTheStripRowsKeepsTheCastAndBlas) {
  // More rows than the strip GEMV takes (quantized_f32_strip_rows): the weight is widened once,
  // in its own [N, K] layout (contiguous reads and writes), and the matmul reads the widened
  // weight transposed (through BLAS, or the f32 strips where a Zen 5's take more rows).
  const int64_t rows = quantized_f32_strip_rows() + 1;
  IrTestBuilder b;
  auto x = b.input("x", DType::F32, {rows, 24});
  auto w = b.weight("w", DType::I8, {16, 24});
  b.output(b.matmul(x, b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), DType::F32)));
  runtime::CompileOptions options;
  options.cache_dir = test_cache_dir();
  const runtime::cpu::Program program = runtime::cpu::build_program(b.graph, options);
  for (const ir::Node& node : program.graph.nodes())
    if (node.op == Op::Cast) {
      EXPECT_EQ(node.shape, (ir::Shape{ir::Expr(int64_t{16}), ir::Expr(int64_t{24})}));
      EXPECT_TRUE(node.inputs[0].view.is_contiguous());
    }
  int casts = 0;
  for (const ir::Node& node : program.graph.nodes())
    if (node.op == Op::Cast) ++casts;
  EXPECT_EQ(casts, 1);
  std::mt19937 rng(6);
  HostTensor weight = int8_weight(16, 24, rng);
  expect_matches_reference(b.graph, {random_tensor(DType::F32, {rows, 24}, rng)}, "prefill",
                           1e-4, {{"w", weight.ref()}});
}

}  // namespace
}  // namespace luminal::testing
