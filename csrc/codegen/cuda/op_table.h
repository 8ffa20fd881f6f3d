// The CUDA op table: the C++ table (codegen/cpp/op_table.h) with the entries that read
// differently in CUDA C overridden, nothing else. Compute domains, rounding after every op and
// integer wrapping are the C++ table's (ops.def semantics), so a kernel computes the same
// values on either target.
//
// What differs:
//   - f16 / bf16 are stored as cuda_fp16.h's __half and cuda_bf16.h's __nv_bfloat16; the CUDA
//     prelude defines the table's lm_h2f / lm_f2h / lm_rh (and bf16) helpers with the
//     round-to-nearest-even intrinsics, so loads, stores and per-op rounding keep the C++
//     table's text.
//   - GCC builtins (__builtin_sqrtf, __builtin_inff, ...) do not exist in NVRTC: every one the
//     C++ table writes is respelled to its CUDA math function (cuda_spelling below).
//   - Row kernels combine per-thread partial accumulators across a block: merge_functor()
//     names the prelude functor that does it.
#pragma once

#include <string>
#include <vector>

#include "codegen/cpp/op_table.h"

namespace luminal::codegen::cuda {

class CudaOpTable : public cpp::CppOpTable {
 public:
  std::string storage_type(ir::DType t) const override;
  std::string literal(const ir::Scalar& s, ir::DType t) const override;
  std::string convert(ir::DType from, ir::DType to, const std::string& v) const override;
  std::string op(ir::Op op, ir::DType in, ir::DType out, const std::vector<std::string>& args,
                 bool& may_fail) const override;
  // The C++ reduction text respelled; no simd clause. The accumulator is combined across
  // threads with merge_functor(op) and, for max/min over floats, a NaN flag OR-ed alongside.
  cpp::ReductionText reduction(ir::Op op, ir::DType t, int id) const override;
  // The prelude functor that merges two partial accumulators of reduction `op`.
  std::string merge_functor(ir::Op op) const;
};

// `text` with every GCC builtin the C++ table writes replaced by its CUDA spelling. Throws
// InternalError for a builtin with no CUDA spelling (a C++ table entry the CUDA table has not
// been taught yet), so a new entry cannot silently reach NVRTC.
std::string cuda_spelling(const std::string& text);

const CudaOpTable& cuda_op_table();

}  // namespace luminal::codegen::cuda
