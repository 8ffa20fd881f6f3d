// cuBLASLt, loaded on first use with dlopen like NVRTC and the driver: luminal never links it.
// One CublasLt per executable: its handle, its workspace, and the matmul descriptors and
// algorithm chosen for each distinct problem (the heuristic runs once per shape and layout).
// Products are computed as torch computes them by default: f32 in f32 (no TF32), f16/bf16 with
// f32 accumulation and one rounding, f64 in f64.
#pragma once

#include <cuda.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/gemm_plan.h"

namespace luminal::runtime::cuda {

// Where libcublasLt is looked for after $LUMINAL_CUBLASLT_PATH and before the loader's own
// search ("libcublasLt.so.13", ".so.12") and $CUDA_HOME/lib64. The Python bindings add pip's
// nvidia-cublas wheel here.
void set_cublaslt_candidates(std::vector<std::string> paths);

class CublasLt {
 public:
  CublasLt();  // loads the library (UserError naming the fix when missing); a context is current
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  // Enqueues `plan`'s calls on `stream`: out = a x b in `dtype` (f32, f64, f16 or bf16), the
  // plan's element offsets applied to the three device pointers; with `bias` (a device pointer
  // to N elements of `dtype`, or 0 for none) out = a x b + bias through cuBLASLt's bias
  // epilogue, rounded once. Capturable into a CUDA graph.
  void matmul(ir::DType dtype, const GemmPlan& plan, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out, CUstream stream,
              CUdeviceptr bias = 0);

  // Problems whose descriptors and algorithm are cached.
  size_t cached_problems() const { return problems_.size(); }

 private:
  struct Problem;
  const Problem& problem(ir::DType dtype, const GemmPlan& plan, int alignment, bool bias);

  void* handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<std::vector<int64_t>, std::unique_ptr<Problem>> problems_;
};

}  // namespace luminal::runtime::cuda
