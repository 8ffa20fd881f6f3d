// The CUDA emitter's scan kernel: the shape of its source, and that NVRTC compiles it for
// sm_80 and sm_90 without an error or a warning where NVRTC can be loaded (LUMINAL_NVRTC_PATH,
// CUDA_HOME; skipped otherwise). tests/cuda sweeps the other kernels through whole models.
#include <gtest/gtest.h>

#ifdef LUMINAL_WITH_CUDA

#include "codegen/cuda/emit.h"
#include "codegen/lower.h"
#include "common/error.h"
#include "ir_test_builder.h"
#include "runtime/cuda/check_kernels.h"

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

}  // namespace
}  // namespace luminal::testing

#endif  // LUMINAL_WITH_CUDA
