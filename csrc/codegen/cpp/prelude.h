// The text every generated C++ translation unit starts with: storage and compute types, the
// f16/bf16 rounding helpers (csrc/common/half.h itself, embedded at build time so that
// generated kernels round exactly as the reference runtime does), wrapping integer arithmetic,
// and the libm functions declared `omp declare simd` so that GCC vectorises them through
// glibc's libmvec (the kernel library links -lmvec).
#pragma once

#include <string>

namespace luminal::codegen::cpp {

const std::string& prelude();

}  // namespace luminal::codegen::cpp
