#include "runtime/kernel_status.h"

#include "codegen/cpp/emit.h"
#include "common/error.h"

namespace luminal::runtime {

void raise_kernel_status(const std::string& what, int64_t status, int64_t detail, int64_t bound) {
  switch (status) {
    case codegen::cpp::kKernelOk: return;
    case codegen::cpp::kKernelIndexOutOfRange:
      USER_ERROR() << what << ": index " << detail << " is out of bounds for a dimension with size " << bound;
      break;
    case codegen::cpp::kKernelEmptyReduction:
      USER_ERROR() << what << ": max/min over an axis of size 0 has no identity";
      break;
    case codegen::cpp::kKernelDivisionByZero: USER_ERROR() << what << ": integer division by zero"; break;
    case codegen::cpp::kKernelOutOfMemory:
      USER_ERROR() << what << ": out of memory for the kernel's scratch buffers";
      break;
    case codegen::cpp::kKernelTooManyRows:
      INTERNAL_ERROR() << what << ": a strip GEMV called with more rows than its block holds";
      break;
    default: INTERNAL_ERROR() << what << ": kernel failed with status " << status;
  }
}

}  // namespace luminal::runtime
