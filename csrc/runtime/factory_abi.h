// The runtime factory ABI held in a PyCapsule named "luminal.runtime_factory".
//
// A plugin (an out-of-tree runtime built against these headers with the same compiler and
// standard library) exposes a static RuntimeFactory and hands a capsule holding its address to
// luminal.register_backend(). The struct is C so that its layout is stable; the Runtime it
// creates is a C++ object of runtime.h's interface.
#pragma once

#include <cstdint>

#ifdef __cplusplus
namespace luminal::runtime {
class Runtime;
}
extern "C" {
#endif

#define LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME "luminal.runtime_factory"
// 2: Executable::output_shapes may return nullopt and run() takes a LateOutputAllocator (outputs
// whose shape depends on tensor data).
// 3: BufferRef::device_index (buffers in GPU memory).
// 4: runtime.h's CompileOptions (cpu_isa, time_steps) and RunStats (collective_wait_ns,
// aten_matmuls, steps) grew: a plugin built against version 3's headers has their old layouts.
// 5: CompileOptions::pack_int4_weights and Executable::copied_weights / copied_weight_bytes.
#define LUMINAL_RUNTIME_FACTORY_ABI_VERSION 5u

struct LuminalRuntimeFactory {
  uint32_t abi_version;  // LUMINAL_RUNTIME_FACTORY_ABI_VERSION
  const char* name;      // "cpu", "cuda", ...
  const char* device;    // the torch device type whose tensors it runs on
  // Returns a new luminal::runtime::Runtime (owned by the caller), or null on failure.
  void* (*create)(void);
  void (*destroy)(void* runtime);
};

#ifdef __cplusplus
}
#endif
