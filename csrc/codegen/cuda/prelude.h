// The text every generated CUDA translation unit starts with: fixed-width integer types and
// INT64_* macros (NVRTC has no libc headers), the helpers the C++ op table's text calls
// (lm_wadd, lm_idiv, lm_fmax, lm_floordiv, ... with the C++ prelude's semantics), the f16/bf16
// conversions through cuda_fp16.h / cuda_bf16.h (round to nearest even, as
// csrc/common/half.h does), warp and block reductions for row kernels, and lm_report, which
// records the first error a kernel hits in its info buffer.
#pragma once

#include <string>

namespace luminal::codegen::cuda {

// `halves`: include cuda_fp16.h / cuda_bf16.h and their helpers. Kernels without f16/bf16 leave
// them out, so that they compile with NVRTC alone (no CUDA headers on the include path).
std::string prelude(bool halves);

}  // namespace luminal::codegen::cuda
