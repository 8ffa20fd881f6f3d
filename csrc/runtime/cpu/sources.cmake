# The optimising CPU runtime, its code generator and passes (csrc/runtime/cpu, csrc/codegen,
# csrc/passes), sorted. Generated kernels include csrc/common/half.h's text verbatim.
target_sources(luminal_core PRIVATE
  csrc/codegen/cpp/emit.cpp
  csrc/codegen/cpp/op_table.cpp
  csrc/codegen/cpp/prelude.cpp
  csrc/codegen/kernel.cpp
  csrc/codegen/lower.cpp
  csrc/codegen/scalar_helpers.cpp
  csrc/codegen/value_range.cpp
  csrc/passes/attention.cpp
  csrc/passes/dead_code.cpp
  csrc/passes/fusion/fuse.cpp
  csrc/passes/fusion/legal.cpp
  csrc/passes/fusion/partition.cpp
  csrc/passes/fusion/score.cpp
  csrc/passes/gather_before_pointwise.cpp
  csrc/passes/group_quantized_gemv.cpp
  csrc/passes/legalize_matmul.cpp
  csrc/passes/linear_bias.cpp
  csrc/passes/output_scale.cpp
  csrc/passes/pipeline.cpp
  csrc/passes/quantized_weights.cpp
  csrc/runtime/cpu/arena_pool.cpp
  csrc/runtime/cpu/build_program.cpp
  csrc/runtime/cpu/cpu_executable.cpp
  csrc/runtime/cpu/cpu_runtime.cpp
  csrc/runtime/cpu/fusion_search.cpp
  csrc/runtime/cpu/gemm.cpp
  csrc/runtime/cpu/int4_pairs.cpp
  csrc/runtime/cpu/jit.cpp
  csrc/runtime/cpu/memory_plan.cpp
  csrc/runtime/cpu/scratch_calls.cpp
  csrc/runtime/cpu/search.cpp
  csrc/runtime/cpu/thread_pool.cpp
)
file(READ "${PROJECT_SOURCE_DIR}/csrc/common/half.h" LUMINAL_HALF_SOURCE)
file(WRITE "${CMAKE_BINARY_DIR}/generated/codegen/half_source.inc.tmp" "R\"LUMINALHALF(${LUMINAL_HALF_SOURCE})LUMINALHALF\"\n")
file(COPY_FILE "${CMAKE_BINARY_DIR}/generated/codegen/half_source.inc.tmp" "${CMAKE_BINARY_DIR}/generated/codegen/half_source.inc" ONLY_IF_DIFFERENT)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/csrc/common/half.h")
target_include_directories(luminal_core PRIVATE "${CMAKE_BINARY_DIR}/generated")
