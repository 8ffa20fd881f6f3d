# Sources of csrc/runtime, sorted.
target_sources(luminal_core PRIVATE
  csrc/runtime/aten_fallback.cpp
  csrc/runtime/buffer_layout.cpp
  csrc/runtime/call_stream.cpp
  csrc/runtime/collectives.cpp
  csrc/runtime/cpu_factory.cpp
  csrc/runtime/kernel_status.cpp
  csrc/runtime/reference/aten_call.cpp
  csrc/runtime/reference/collective.cpp
  csrc/runtime/reference/constant_iota.cpp
  csrc/runtime/reference/elementwise.cpp
  csrc/runtime/reference/indexing.cpp
  csrc/runtime/reference/matmul.cpp
  csrc/runtime/reference/reduce.cpp
  csrc/runtime/reference/reference_executable.cpp
  csrc/runtime/reference/reference_runtime.cpp
  csrc/runtime/reference/scan.cpp
  csrc/runtime/reference/select_kernel.cpp
  csrc/runtime/reference/strided.cpp
  csrc/runtime/shared_memory_group.cpp
)
