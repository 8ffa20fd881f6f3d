#include "runtime/cuda/cublaslt.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "common/error.h"

namespace luminal::runtime::cuda {

namespace {

// cuBLASLt's own suggestion for workspace on Hopper; enough for every algorithm it returns.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct LtApi {
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtGetStatusString) StatusString = nullptr;
  decltype(&::cublasLtMatmulDescCreate) DescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) DescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) DescSet = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) LayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) LayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) LayoutSet = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) PreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) PreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) PreferenceSet = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) Heuristic = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;
};

std::mutex candidates_mutex;
std::vector<std::string>& candidates() {
  static std::vector<std::string> paths;
  return paths;
}

template <class F>
void bind(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  USER_CHECK(fn != nullptr) << "libcublasLt has no " << symbol << ": install nvidia-cublas 12 or 13";
}

std::unique_ptr<LtApi> load_cublaslt() {
  std::vector<std::string> paths;
  if (const char* p = std::getenv("LUMINAL_CUBLASLT_PATH"); p && *p) paths.emplace_back(p);
  {
    std::lock_guard<std::mutex> lock(candidates_mutex);
    paths.insert(paths.end(), candidates().begin(), candidates().end());
  }
  paths.insert(paths.end(), {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) paths.push_back(std::string(home) + "/lib64/libcublasLt.so");
  void* lib = nullptr;
  for (const std::string& path : paths)
    if ((lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  USER_CHECK(lib != nullptr) << "cuBLASLt was not found, and the CUDA runtime computes matmuls with it: "
                             << "pip install \"nvidia-cublas==13.*\", or set LUMINAL_CUBLASLT_PATH";
  auto api = std::make_unique<LtApi>();
  bind(lib, "cublasLtCreate", api->Create);
  bind(lib, "cublasLtDestroy", api->Destroy);
  bind(lib, "cublasLtGetStatusString", api->StatusString);
  bind(lib, "cublasLtMatmulDescCreate", api->DescCreate);
  bind(lib, "cublasLtMatmulDescDestroy", api->DescDestroy);
  bind(lib, "cublasLtMatmulDescSetAttribute", api->DescSet);
  bind(lib, "cublasLtMatrixLayoutCreate", api->LayoutCreate);
  bind(lib, "cublasLtMatrixLayoutDestroy", api->LayoutDestroy);
  bind(lib, "cublasLtMatrixLayoutSetAttribute", api->LayoutSet);
  bind(lib, "cublasLtMatmulPreferenceCreate", api->PreferenceCreate);
  bind(lib, "cublasLtMatmulPreferenceDestroy", api->PreferenceDestroy);
  bind(lib, "cublasLtMatmulPreferenceSetAttribute", api->PreferenceSet);
  bind(lib, "cublasLtMatmulAlgoGetHeuristic", api->Heuristic);
  bind(lib, "cublasLtMatmul", api->Matmul);
  return api;
}

const LtApi& lt() {
  static std::mutex mutex;
  static std::unique_ptr<LtApi> api;
  std::lock_guard<std::mutex> lock(mutex);
  if (!api) api = load_cublaslt();
  return *api;
}

void check_lt(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  INTERNAL_ERROR() << what << ": " << lt().StatusString(status) << " (" << static_cast<int>(status) << ")";
}

cudaDataType_t data_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::F32: return CUDA_R_32F;
    case ir::DType::F64: return CUDA_R_64F;
    case ir::DType::F16: return CUDA_R_16F;
    case ir::DType::BF16: return CUDA_R_16BF;
    default: INTERNAL_ERROR() << "cuBLASLt matmul in " << ir::dtype_name(dtype);
  }
  return CUDA_R_32F;
}

// The largest power of two (up to 16) dividing every address: cuBLASLt picks kernels that may
// assume it.
int alignment_of(std::initializer_list<CUdeviceptr> addresses) {
  int alignment = 16;
  for (CUdeviceptr p : addresses)
    while (alignment > 1 && p % static_cast<CUdeviceptr>(alignment) != 0) alignment /= 2;
  return alignment;
}

}  // namespace

void set_cublaslt_candidates(std::vector<std::string> paths) {
  std::lock_guard<std::mutex> lock(candidates_mutex);
  candidates() = std::move(paths);
}

struct CublasLt::Problem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Problem() {
    const LtApi& api = lt();
    if (desc) api.DescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, out})
      if (l) api.LayoutDestroy(l);
  }
};

CublasLt::CublasLt() {
  cublasLtHandle_t handle = nullptr;
  check_lt(lt().Create(&handle), "cublasLtCreate");
  handle_ = handle;
  workspace_ = DeviceBuffer(kWorkspaceBytes);
}

CublasLt::~CublasLt() {
  problems_.clear();
  if (handle_) lt().Destroy(static_cast<cublasLtHandle_t>(handle_));
}

const CublasLt::Problem& CublasLt::problem(ir::DType dtype, const GemmPlan& plan, int alignment, bool bias) {
  const std::vector<int64_t> key{static_cast<int64_t>(dtype), plan.m, plan.n, plan.k, plan.a.transpose, plan.a.ld,
                                 plan.b.transpose, plan.b.ld, plan.batch, plan.a_batch_stride, plan.b_batch_stride,
                                 plan.out_batch_stride, alignment, bias};
  if (auto it = problems_.find(key); it != problems_.end()) return *it->second;
  const LtApi& api = lt();
  auto p = std::make_unique<Problem>();
  const bool f64 = dtype == ir::DType::F64;
  // CUBLAS_COMPUTE_32F, not _FAST_TF32: torch's default (allow_tf32 = False) rounds like f32.
  check_lt(api.DescCreate(&p->desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F),
           "cublasLtMatmulDescCreate");
  // cuBLASLt's operands are (b^T, a^T): see gemm_plan.h.
  const cublasOperation_t op_first = plan.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = plan.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(api.DescSet(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)), "TRANSA");
  check_lt(api.DescSet(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)), "TRANSB");
  if (bias) {
    // One bias element per row of cuBLASLt's output (out^T), i.e. per column N of ours: the
    // bias in the output's dtype, the default for every dtype here.
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check_lt(api.DescSet(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), "EPILOGUE");
  }
  const cudaDataType_t type = data_type(dtype);
  const auto layout = [&](cublasLtMatrixLayout_t* l, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    check_lt(api.LayoutCreate(l, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    if (plan.batch == 1) return;
    const int32_t count = static_cast<int32_t>(plan.batch);
    check_lt(api.LayoutSet(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), "BATCH_COUNT");
    check_lt(api.LayoutSet(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)), "BATCH_OFFSET");
  };
  USER_CHECK(plan.batch <= INT32_MAX) << "a batched matmul of " << plan.batch << " products exceeds cuBLASLt's range";
  layout(&p->a, static_cast<uint64_t>(plan.b.rows), static_cast<uint64_t>(plan.b.cols), plan.b.ld, plan.b_batch_stride);
  layout(&p->b, static_cast<uint64_t>(plan.a.rows), static_cast<uint64_t>(plan.a.cols), plan.a.ld, plan.a_batch_stride);
  layout(&p->out, static_cast<uint64_t>(plan.n), static_cast<uint64_t>(plan.m), plan.n, plan.out_batch_stride);

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(api.PreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  const uint32_t align = static_cast<uint32_t>(alignment);
  check_lt(api.PreferenceSet(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)),
           "MAX_WORKSPACE_BYTES");
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    check_lt(api.PreferenceSet(preference, attribute, &align, sizeof(align)), "MIN_ALIGNMENT");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = api.Heuristic(static_cast<cublasLtHandle_t>(handle_), p->desc, p->a, p->b, p->out,
                                              p->out, preference, 1, &result, &found);
  api.PreferenceDestroy(preference);
  check_lt(status, "cublasLtMatmulAlgoGetHeuristic");
  USER_CHECK(found > 0) << "cuBLASLt has no algorithm for a " << ir::dtype_name(dtype) << " matmul of " << plan.m
                        << "x" << plan.k << " by " << plan.k << "x" << plan.n << " (batch " << plan.batch << ")";
  p->algo = result.algo;
  return *problems_.emplace(key, std::move(p)).first->second;
}

void CublasLt::matmul(ir::DType dtype, const GemmPlan& plan, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out,
                      CUstream stream, CUdeviceptr bias) {
  const auto element = static_cast<CUdeviceptr>(ir::dtype_size(dtype));
  for (const GemmPlan::Call& call : plan.calls) {
    const CUdeviceptr pa = a + static_cast<CUdeviceptr>(call.a) * element;
    const CUdeviceptr pb = b + static_cast<CUdeviceptr>(call.b) * element;
    const CUdeviceptr po = out + static_cast<CUdeviceptr>(call.out) * element;
    const Problem& p = problem(dtype, plan, alignment_of({pa, pb, po}), bias != 0);
    if (bias != 0) {
      const void* pointer = reinterpret_cast<const void*>(bias);
      check_lt(lt().DescSet(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer, sizeof(pointer)), "BIAS_POINTER");
    }
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const bool f64 = dtype == ir::DType::F64;
    check_lt(lt().Matmul(static_cast<cublasLtHandle_t>(handle_), p.desc, f64 ? static_cast<const void*>(&one_d) : &one_f,
                         reinterpret_cast<const void*>(pb), p.a, reinterpret_cast<const void*>(pa), p.b,
                         f64 ? static_cast<const void*>(&zero_d) : &zero_f, reinterpret_cast<void*>(po), p.out,
                         reinterpret_cast<void*>(po), p.out, &p.algo, reinterpret_cast<void*>(workspace_.get()),
                         kWorkspaceBytes, stream),
             "cublasLtMatmul");
  }
}

}  // namespace luminal::runtime::cuda
