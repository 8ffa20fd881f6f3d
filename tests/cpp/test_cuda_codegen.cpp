// The CUDA emitter's scan and attention kernels: the shape of their source and launch, and that
// NVRTC compiles them for sm_80 and sm_90 without an error or a warning where NVRTC can be loaded
// (LUMINAL_NVRTC_PATH, CUDA_HOME; skipped otherwise). tests/cuda sweeps the other kernels through
// whole models.
#include <gtest/gtest.h>

#ifdef LUMINAL_WITH_CUDA

#include <cmath>

#include "codegen/cuda/emit.h"
#include "codegen/lower.h"
#include "common/error.h"
#include "ir_test_builder.h"
#include "runtime/cuda/check_kernels.h"
#include "runtime/cuda/kernel_plan.h"

namespace luminal::testing {
namespace {

using ir::Expr;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The __global__ function of a translation unit, without the prelude.
std::string kernel_of(const std::string& source) { return source.substr(source.find("extern \"C\" __global__")); }

codegen::cuda::CudaKernelSource scan_source(DType dtype, const ir::Shape& shape, int axis) {
  IrTestBuilder b;
  auto y = b.cumsum(b.input("x", dtype, shape), axis);
  b.output(y);
  return codegen::cuda::emit_kernel(codegen::lower_scan(b.graph, y.node).kernel, "k");
}

TEST(CudaCodegen, ScanIsOneThreadPerRow) {
  // [7, 13, 5] along the middle: 35 rows, each thread walking its rows' axis in order.
  const codegen::cuda::CudaKernelSource scan = scan_source(DType::F32, {7, 13, 5}, 1);
  EXPECT_EQ(scan.launch.kind, codegen::cuda::LaunchSpec::Kind::Elementwise);
  EXPECT_EQ(scan.launch.work, Expr(int64_t{35}));
  const std::string source = kernel_of(scan.source);
  EXPECT_EQ(count(source, "lm_p < lm_rows; lm_p += (int64_t)gridDim.x * blockDim.x) {"), 1u) << source;
  EXPECT_EQ(count(source, "for (int64_t i1 = 0; i1 < INT64_C(13); ++i1) {"), 1u) << source;
  EXPECT_EQ(count(source, "double lm_sum = 0;"), 1u) << source;
  EXPECT_EQ(count(source, "] = (float)(lm_sum);"), 1u) << source;
  EXPECT_EQ(count(source, "__syncthreads"), 0u) << "rows are independent:\n" << source;
  // One row: no index to split from the work item, so none is declared (NVRTC warns on unused
  // variables).
  const std::string one_row = kernel_of(scan_source(DType::F16, {Expr::symbol("s0")}, 0).source);
  EXPECT_EQ(count(one_row, "lm_r "), 0u) << one_row;
  EXPECT_EQ(count(one_row, "= lm_f2h(lm_sum);"), 1u) << one_row;
}

TEST(CudaCodegen, ScanCompilesWithNvrtcWithoutWarnings) {
  runtime::cuda::NvrtcCompiler compiler;
  try {
    compiler.version();
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  const Expr s = Expr::symbol("s0");
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64,
                  DType::U8}) {
    for (const ir::Shape& shape : {ir::Shape{7, 13, 5}, ir::Shape{s}, ir::Shape{3, 1, s}}) {
      for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
        IrTestBuilder b;
        b.output(b.cumsum(b.input("x", t, shape), axis));
        const runtime::cuda::KernelCheckReport report =
            runtime::cuda::check_kernels(b.graph, {"sm_80", "sm_90"}, runtime::cuda::ImageKind::Cubin, compiler);
        ASSERT_EQ(report.kernels.size(), 1u);
        for (const auto& [arch, image] : report.kernels[0].images)
          EXPECT_TRUE(image->ok && !image->has_warnings)
              << ir::dtype_name(t) << " " << ir::shape_to_string(shape) << " axis " << axis << " " << arch << ":\n"
              << image->log << "\n"
              << report.kernels[0].source;
      }
    }
  }
}

// Attention as translator/attention.cpp composes it: q [H, L, E], k [H, S, E] read transposed,
// v [H, S, Ev], an optional [L, S] bias broadcast over the heads: an input, or with `causal` the
// causal mask of keys s <= l + start, start an i64 [] input (transformers' StaticCache mask).
ir::Graph attention_graph(int64_t heads, const Expr& L, const Expr& S, int64_t E, const Expr& Ev, bool bias,
                          bool causal = false) {
  IrTestBuilder b;
  auto q = b.input("q", DType::F32, {heads, L, E});
  auto k = b.input("k", DType::F32, {heads, S, E});
  auto v = b.input("v", DType::F32, {heads, S, Ev});
  const ir::Shape scores_shape = {heads, L, S};
  const ir::Shape row_shape = {heads, L, 1};
  auto scalar = [&](double value, const ir::Shape& shape) {
    auto c = b.constant(value, DType::F32, {});
    return viewed(c, c.view.expand(shape));
  };
  auto x = b.binary(Op::Mul, b.matmul(q, viewed(k, k.view.permute({0, 2, 1}))), scalar(0.125, scores_shape));
  if (bias && causal) {
    const TensorRef start = b.input("start", DType::I64, {});
    const TensorRef rows = b.binary(Op::Add, b.iota(0, DType::I64, {L}), viewed(start, start.view.expand({L})));
    const TensorRef cols = b.iota(0, DType::I64, {S});
    auto allowed = b.binary(Op::Le, viewed(cols, cols.view.unsqueeze(0).expand({L, S})),
                            viewed(rows, rows.view.unsqueeze(1).expand({L, S})));
    auto mask = b.where(allowed, scalar(0.0, {L, S}), scalar(-INFINITY, {L, S}));
    x = b.binary(Op::Add, x, viewed(mask, mask.view.expand(scores_shape)));
  } else if (bias) {
    auto mask = b.input("bias", DType::F32, {L, S});
    x = b.binary(Op::Add, x, viewed(mask, mask.view.expand(scores_shape)));
  }
  auto max = b.reduce(Op::MaxReduce, x, 2);
  auto shift = b.where(b.binary(Op::Eq, max, scalar(-INFINITY, row_shape)), scalar(0.0, row_shape), max);
  auto exps = b.unary(Op::Exp, b.binary(Op::Sub, x, viewed(shift, shift.view.expand(scores_shape))));
  auto sum = b.reduce(Op::SumReduce, exps, 2);
  auto safe_sum = b.where(b.binary(Op::Eq, sum, scalar(0.0, row_shape)), scalar(1.0, row_shape), sum);
  auto probabilities = b.binary(Op::Div, exps, viewed(safe_sum, safe_sum.view.expand(scores_shape)));
  b.output(b.matmul(probabilities, v));
  return b.graph;
}

// The CUDA plan of an attention graph: one attention kernel and nothing else.
codegen::Kernel attention_kernel(const ir::Graph& graph) {
  passes::PassContext cx;
  const runtime::cuda::CudaKernelPlan plan = runtime::cuda::plan_cuda_kernels(graph, cx);
  EXPECT_EQ(plan.steps.size(), 1u) << "no scores buffer and no GEMMs: the pattern kernel is the whole plan";
  for (const runtime::cuda::CudaStep& step : plan.steps)
    if (step.kind == runtime::cuda::CudaStep::Kind::Kernel &&
        step.lowered.kernel.kind == codegen::KernelKind::Attention)
      return step.lowered.kernel;
  ADD_FAILURE() << "no attention kernel in the CUDA plan";
  return {};
}

// A profiler lists kernels by name: the plan's names say which kind of group each one runs.
TEST(CudaCodegen, PlannedKernelsAreNamedAfterTheirGroupKind) {
  passes::PassContext cx;
  const runtime::cuda::CudaKernelPlan plan =
      runtime::cuda::plan_cuda_kernels(attention_graph(3, 41, 43, 20, 20, /*bias=*/true), cx);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].cuda.name.rfind("lm_attention_", 0), 0u) << plan.steps[0].cuda.name;
  EXPECT_EQ(plan.steps[0].cuda.name.size(), std::string("lm_attention_").size() + 24);
}

TEST(CudaCodegen, AttentionIsOneBlockPerQueryTile) {
  using codegen::cuda::LaunchSpec;
  // 41 query rows: tiles of 36 (kAttentionRows) and 5; 43 keys; head dim 20.
  codegen::Kernel kernel = attention_kernel(attention_graph(3, 41, 43, 20, 20, /*bias=*/true));
  codegen::cuda::CudaKernelSource attention = codegen::cuda::emit_kernel(kernel, "k");
  EXPECT_EQ(attention.launch.kind, LaunchSpec::Kind::Attention);
  EXPECT_STREQ(codegen::cuda::launch_kind_name(attention.launch.kind), "one block per query tile");
  EXPECT_EQ(attention.launch.work, Expr(int64_t{3 * 2}));
  EXPECT_EQ(attention.launch.block_threads, 256);
  std::string source = kernel_of(attention.source);
  EXPECT_EQ(count(source, "__launch_bounds__(256)"), 1u) << source;
  EXPECT_EQ(count(source, "const int64_t lm_tiles = (lm_L + 35) / 36;"), 1u) << source;
  // The block's key window (columns some row's bias does not mask) is a block reduction...
  EXPECT_EQ(count(source, "const int64_t lm_lo = lm_block_reduce(lm_first, lm_min_op());"), 1u) << source;
  EXPECT_EQ(count(source, "const int64_t lm_hi = lm_block_reduce(lm_last, lm_max_op());"), 1u) << source;
  // ...then the block stages its rows and each tile of 32 keys in shared memory: 8 warps of 5
  // rows each, the head dim padded to 20 and rows 28 floats apart (7 float4: no bank conflicts).
  EXPECT_EQ(count(source, "constexpr int LM_W = 8, LM_RW = 5, LM_EP = 20, LM_QS = 28, LM_EV = 20, LM_CPL = 1;"), 1u)
      << source;
  EXPECT_EQ(count(source, "__shared__ __align__(16) float lm_qs[1120];"), 1u) << source;
  EXPECT_EQ(count(source, "for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {"), 2u) << "max, then exps\n"
                                                                                               << source;
  EXPECT_EQ(count(source, "lm_nan[lm_s] = lm_warp_reduce(lm_nan[lm_s], lm_or_op());"), 1u) << source;
  // Scores: fused q·k in head-dim order, then the reference's separately rounded Mul and Add.
  EXPECT_EQ(count(source, "lm_dot[lm_s] = fmaf(lm_qq.x, lm_kk.x, lm_dot[lm_s]);"), 1u) << source;
  EXPECT_EQ(count(source, "__fadd_rn(__fmul_rn(lm_dot[lm_s], lm_scale), lm_b["), 2u) << source;
  EXPECT_EQ(count(source, "const float lm_scale = (float)0.125;"), 1u) << source;
  EXPECT_EQ(count(source, "return;"), 0u) << "no thread leaves a block that synchronises\n" << source;

  // Kernel::tile (the schedule's query rows per block), rounded to the C++ kernel's 6-row tile.
  kernel.tile = 18;
  EXPECT_EQ(codegen::cuda::emit_kernel(kernel, "k").launch.work, Expr(int64_t{3 * 3}));
  kernel.tile = 10;
  EXPECT_EQ(codegen::cuda::attention_rows_per_block(kernel), 12);
  EXPECT_EQ(codegen::cuda::emit_kernel(kernel, "k").launch.work, Expr(int64_t{3 * 4}));

  // A decode step (one query row) splits its key tiles over 8 warps, the row's max a block
  // reduction, the warps' sums added in warp order; without a bias every key is attended.
  attention = codegen::cuda::emit_kernel(attention_kernel(attention_graph(4, 1, 40, 8, 8, /*bias=*/false)), "k");
  EXPECT_EQ(attention.launch.work, Expr(int64_t{4}));
  EXPECT_EQ(attention.launch.block_threads, 256);
  source = kernel_of(attention.source);
  EXPECT_EQ(count(source, "const int64_t lm_lo = 0, lm_hi = lm_S;"), 1u) << source;
  EXPECT_EQ(count(source, "lm_m = lm_block_reduce(lm_m, lm_max_op());"), 1u) << source;
  EXPECT_EQ(count(source, "lm_j0 = lm_lo + 32 * lm_warp; lm_j0 < lm_hi; lm_j0 += blockDim.x)"), 1u) << source;
  EXPECT_EQ(count(source, "for (int lm_w = 0; lm_w < LM_W; ++lm_w) lm_a += lm_parts[lm_w]"), 1u) << source;
  EXPECT_EQ(count(source, "return __fmul_rn(lm_dot, lm_scale);"), 1u) << source;

  // Dynamic dims are arguments; 300 value columns do not fit the tiles' registers: one warp
  // per row, 8 registers per lane and two passes.
  const Expr L = Expr::symbol("s0"), S = Expr::symbol("s1");
  attention = codegen::cuda::emit_kernel(attention_kernel(attention_graph(2, L, S, 16, 300, /*bias=*/true)), "k");
  EXPECT_EQ(attention.symbols, (std::vector<std::string>{"s0", "s1"}));
  EXPECT_EQ(attention.launch.block_threads, 256);
  EXPECT_EQ(attention.launch.work, Expr(int64_t{2}) * floordiv(L + Expr(int64_t{35}), Expr(int64_t{36})));
  source = kernel_of(attention.source);
  EXPECT_EQ(count(source, "const int64_t lm_L = S_s0;"), 1u) << source;
  EXPECT_EQ(count(source, "const int64_t lm_S = S_s1;"), 1u) << source;
  EXPECT_EQ(count(source, "float lm_acc[8];"), 1u) << source;
  EXPECT_EQ(count(source, "lm_c0 < lm_Ev; lm_c0 += 256)"), 1u) << source;
  EXPECT_EQ(count(source, "lm_l = lm_r0 + (threadIdx.x >> 5); lm_l < lm_r1; lm_l += lm_warps)"), 1u) << source;
  EXPECT_EQ(count(source, "__shfl_sync(0xffffffffu, lm_e, lm_i)"), 1u) << source;
  EXPECT_EQ(count(source, "return;"), 0u) << source;
}

TEST(CudaCodegen, CausalAttentionMasksItsRowsFromTheStartItReads) {
  // The causal mask is no tensor: the plan is the attention kernel alone, which reads the start
  // (param 3), takes each block's keys up to its last row's and masks past each row's diagonal.
  codegen::Kernel kernel = attention_kernel(attention_graph(3, 41, 70, 20, 20, /*bias=*/true, /*causal=*/true));
  ASSERT_EQ(kernel.params.size(), 5u);
  EXPECT_EQ(kernel.params[3].dtype, DType::I64);
  const std::string source = kernel_of(codegen::cuda::emit_kernel(kernel, "k").source);
  EXPECT_EQ(count(source, "(int64_t)p3[INT64_C(0)]"), 1u) << source;
  EXPECT_EQ(count(source, "const int64_t lm_lo = 0, lm_hi = lm_imax((int64_t)0, lm_imin(lm_S, lm_r1 + lm_shift));"), 1u)
      << source;
  EXPECT_EQ(count(source, "lm_j <= lm_l + lm_shift ? __fmul_rn(lm_dot[lm_s], lm_scale) : -lm_inff()"), 2u) << source;
}

TEST(CudaCodegen, AttentionCompilesWithNvrtcWithoutWarnings) {
  runtime::cuda::NvrtcCompiler compiler;
  try {
    compiler.version();
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  const Expr L = Expr::symbol("s0"), S = Expr::symbol("s1"), Ev = Expr::symbol("s2");
  const std::vector<ir::Graph> graphs = {
      attention_graph(3, 41, 43, 20, 20, true), attention_graph(4, 1, 40, 8, 8, false),
      attention_graph(2, L, S, 16, 300, true), attention_graph(2, L, S, 64, Ev, false),
      attention_graph(2, 5, 30, 128, 128, true), attention_graph(2, 1, S, 256, 256, true),
      attention_graph(3, 41, 70, 20, 20, true, /*causal=*/true), attention_graph(2, 1, S, 64, 64, true, true)};
  for (const ir::Graph& graph : graphs) {
    codegen::Kernel kernel = attention_kernel(graph);
    // The lowering gives f32 operands (the translator computes half attention in f32); the
    // emitter also reads and writes f16/bf16 buffers, computing in f32 and rounding on store.
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      for (codegen::Param& p : kernel.params)
        if (ir::is_floating(p.dtype)) p.dtype = t;  // (not a causal mask's start)
      const codegen::cuda::CudaKernelSource attention = codegen::cuda::emit_kernel(kernel, "lm_attention");
      EXPECT_EQ(attention.uses_halves, t != DType::F32);
      if (t != DType::F32) EXPECT_EQ(count(attention.source, t == DType::F16 ? "= lm_f2h(" : "= lm_f2bf("), 1u);
      for (const std::string arch : {"sm_80", "sm_90"}) {
        const auto image = compiler.compile(attention.source, attention.name, arch,
                                            runtime::cuda::ImageKind::Cubin, attention.uses_halves);
        EXPECT_TRUE(image->ok && !image->has_warnings) << ir::dtype_name(t) << " " << arch << ":\n"
                                                       << image->log << "\n"
                                                       << attention.source;
      }
    }
  }
}

// torchao's quantized Linears as the translator composes them: x [M, K] times Cast(w [N, K]
// int8)^T in the activations' dtype (weight-only), or both operands widened to i32 (_int_mm, with
// int8 activations or, torchao's form for AVX512-VNNI CPUs, uint8 ones: `activations`).
ir::Graph int8_linear(DType t, int64_t m, int64_t n, int64_t k, DType activations = DType::I8) {
  IrTestBuilder b;
  auto x = b.input("x", t == DType::I32 ? activations : t, {m, k});
  auto w = b.weight("w", DType::I8, {n, k});
  auto a = t == DType::I32 ? b.unary(Op::Cast, x, t) : x;
  b.output(b.matmul(a, b.unary(Op::Cast, viewed(w, w.view.permute({1, 0})), t)));
  return b.graph;
}

// Whether NVRTC can be loaded here (LUMINAL_NVRTC_PATH, CUDA_HOME): the compile checks are
// skipped where it cannot.
bool nvrtc_loads(runtime::cuda::NvrtcCompiler& compiler) {
  try {
    compiler.version();
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// `graph` is one kernel, which NVRTC compiles for sm_80 and sm_90 without an error or a warning.
void expect_one_kernel_compiles_without_warnings(const ir::Graph& graph, runtime::cuda::NvrtcCompiler& compiler,
                                                 const std::string& what) {
  const runtime::cuda::KernelCheckReport report =
      runtime::cuda::check_kernels(graph, {"sm_80", "sm_90"}, runtime::cuda::ImageKind::Cubin, compiler);
  ASSERT_EQ(report.kernels.size(), 1u) << what;
  for (const auto& [arch, image] : report.kernels[0].images)
    EXPECT_TRUE(image->ok && !image->has_warnings) << what << " " << arch << ":\n"
                                                   << image->log << "\n"
                                                   << report.kernels[0].source;
}

TEST(CudaCodegen, QuantizedGemvsReadTheInt8WeightAndCompileWithNvrtc) {
  runtime::cuda::NvrtcCompiler compiler;
  const bool nvrtc = nvrtc_loads(compiler);
  // Depths with and without a tail after the 16-byte chunks; an int8 product of several rows
  // (a prefill with dynamic activations) is a GEMV too.
  for (auto [t, m, n, k, activations] :
       {std::tuple<DType, int64_t, int64_t, int64_t, DType>{DType::F32, 1, 24, 40, DType::F32},
        {DType::F32, 1, 64, 4096, DType::F32}, {DType::BF16, 1, 13, 37, DType::BF16},
        {DType::BF16, 1, 64, 2048, DType::BF16}, {DType::I32, 1, 33, 70, DType::I8}, {DType::I32, 5, 17, 256, DType::I8},
        {DType::I32, 1, 33, 70, DType::U8}, {DType::I32, 5, 17, 256, DType::U8}}) {
    const std::string what = std::string(ir::dtype_name(t)) + " of " + ir::dtype_name(activations) + " " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    const ir::Graph graph = int8_linear(t, m, n, k, activations);
    passes::PassContext cx;
    const runtime::cuda::CudaKernelPlan plan = runtime::cuda::plan_cuda_kernels(graph, cx);
    // One GEMV reading the int8 operands: no kernel widens the weight into a buffer per call.
    ASSERT_EQ(plan.steps.size(), 1u) << what;
    const codegen::Kernel& gemv = plan.steps[0].lowered.kernel;
    ASSERT_EQ(gemv.kind, codegen::KernelKind::Gemv) << what;
    EXPECT_EQ(gemv.params[1].dtype, DType::I8) << what;
    EXPECT_EQ(gemv.params[0].dtype, activations) << what;
    // Sixteen bytes of weight per chunk, widened in registers (or four dp4a).
    const char* widen = t == DType::I32 ? (activations == DType::U8 ? "dp4a.u32.s32" : "__dp4a(")
                        : t == DType::F32 ? "(float)lm_wq["
                                          : "(float)lm_q4.";
    EXPECT_EQ(count(plan.steps[0].cuda.source, widen), 4u) << plan.steps[0].cuda.source;
    if (nvrtc) expect_one_kernel_compiles_without_warnings(graph, compiler, what);
  }
}

// torchao's IntxWeightOnlyConfig Linears (int4 values one a byte, a scale and an optional zero
// point per group along K) at decode: one GEMV that dequantizes the int8 bytes in registers,
// where a kernel of its own had written a dequantized copy of the whole weight on every call.
TEST(CudaCodegen, GroupQuantizedGemvsDequantizeInRegistersAndCompileWithNvrtc) {
  runtime::cuda::NvrtcCompiler compiler;
  const bool nvrtc = nvrtc_loads(compiler);
  // Groups of 32 and 128 read in 16-byte chunks (each in one group); a group of 8 element by
  // element; a depth of 40 groups of 8 leaves no whole chunk in some rows.
  for (auto [t, n, groups, group, zero_points] :
       {std::tuple<DType, int64_t, int64_t, int64_t, bool>{DType::BF16, 64, 64, 32, true},
        {DType::BF16, 13, 3, 128, false}, {DType::F32, 24, 8, 32, true}, {DType::F32, 17, 2, 128, false},
        {DType::BF16, 9, 5, 8, true}, {DType::F32, 11, 40, 8, false}}) {
    const std::string what = std::string(ir::dtype_name(t)) + " " + std::to_string(n) + "x" +
                             std::to_string(groups) + "x" + std::to_string(group) +
                             (zero_points ? " with zero points" : "");
    const ir::Graph graph = group_quantized_linear(t, n, groups, group, zero_points);
    passes::PassContext cx;
    const runtime::cuda::CudaKernelPlan plan = runtime::cuda::plan_cuda_kernels(graph, cx);
    ASSERT_EQ(plan.steps.size(), 1u) << what;
    const codegen::Kernel& gemv = plan.steps[0].lowered.kernel;
    ASSERT_EQ(gemv.kind, codegen::KernelKind::Gemv) << what;
    EXPECT_EQ(gemv.gemv.group, group) << what;
    EXPECT_EQ(gemv.params[1].dtype, DType::I8) << what;
    ASSERT_EQ(gemv.params.size(), zero_points ? 5u : 4u) << what;
    const std::string source = kernel_of(plan.steps[0].cuda.source);
    // Each weight dequantized as the IR computes it: (q - zero) * scale, one rounding (to bf16
    // for a bf16 Linear), in the chunks' products (four written in a loop over a chunk's 16) and
    // the element-by-element tail.
    const size_t chunked = group % 16 == 0 ? 4 : 0;
    EXPECT_EQ(count(source, "__fmul_rn((float)"), chunked + 1) << source;
    EXPECT_EQ(count(source, " - lm_gz, lm_gs)"), zero_points ? chunked + 1 : 0u) << source;
    EXPECT_EQ(count(source, "lm_rbf(__fmul_rn("), t == DType::BF16 ? chunked + 1 : 0u) << source;
    EXPECT_EQ(count(source, "const uint4 lm_wv"), chunked ? 1u : 0u) << source;
    if (nvrtc) expect_one_kernel_compiles_without_warnings(graph, compiler, what);
  }
}

}  // namespace
}  // namespace luminal::testing

#endif  // LUMINAL_WITH_CUDA
