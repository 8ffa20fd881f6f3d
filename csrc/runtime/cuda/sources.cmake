# The CUDA code generator and runtime (csrc/codegen/cuda, csrc/runtime/cuda), sorted. Built when
# LUMINAL_CUDA is ON. Nothing here links CUDA: NVRTC and the driver are loaded with dlopen
# on first use, so the module imports on machines without a GPU.
target_sources(luminal_core PRIVATE
  csrc/codegen/cuda/emit.cpp
  csrc/codegen/cuda/op_table.cpp
  csrc/codegen/cuda/prelude.cpp
  csrc/runtime/cuda/check_kernels.cpp
  csrc/runtime/cuda/cublaslt.cpp
  csrc/runtime/cuda/cuda_executable.cpp
  csrc/runtime/cuda/cuda_program.cpp
  csrc/runtime/cuda/cuda_runtime.cpp
  csrc/runtime/cuda/driver.cpp
  csrc/runtime/cuda/gemm_plan.cpp
  csrc/runtime/cuda/kernel_plan.cpp
  csrc/runtime/cuda/nvrtc.cpp
  csrc/runtime/cuda/strided_copy.cpp
)
target_compile_definitions(luminal_core PUBLIC LUMINAL_WITH_CUDA=1)
target_compile_definitions(luminal_core PRIVATE
  LUMINAL_CUDA_INCLUDE_DIR="${LUMINAL_CUDA_INCLUDE_DIR}"
  LUMINAL_CUDA_TOOLKIT_DIR="${LUMINAL_CUDA_TOOLKIT_DIR}")
target_include_directories(luminal_core PRIVATE "${LUMINAL_CUDA_INCLUDE_DIR}" "${LUMINAL_CUBLAS_INCLUDE_DIR}")
target_link_libraries(luminal_core PUBLIC ${CMAKE_DL_LIBS})
