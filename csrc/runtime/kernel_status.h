// The error a generated kernel reported (codegen::cpp::KernelStatus, written by the C++ and the
// CUDA kernels alike) as the exception users see, naming the step: one wording for both runtimes.
#pragma once

#include <cstdint>
#include <string>

namespace luminal::runtime {

// Does nothing for kKernelOk; otherwise throws UserError (or InternalError for a status no
// kernel should write). `detail` and `bound` are the kernel's two info words: for an index out
// of range, the index and the size of its dimension.
void raise_kernel_status(const std::string& what, int64_t status, int64_t detail, int64_t bound);

}  // namespace luminal::runtime
