#include "runtime/cpu_factory.h"

#include <new>

#include "runtime/reference/reference_runtime.h"

namespace luminal::runtime {

namespace {

// Nothing may unwind across the C ABI: a failure is reported as null.
void* create_cpu_runtime() noexcept {
  try {
    return static_cast<Runtime*>(new reference::ReferenceRuntime());
  } catch (...) {
    return nullptr;
  }
}

void destroy_cpu_runtime(void* runtime) noexcept { delete static_cast<Runtime*>(runtime); }

const LuminalRuntimeFactory kCpuFactory{LUMINAL_RUNTIME_FACTORY_ABI_VERSION, "cpu", "cpu", create_cpu_runtime,
                                        destroy_cpu_runtime};

}  // namespace

const LuminalRuntimeFactory* cpu_runtime_factory() { return &kCpuFactory; }

}  // namespace luminal::runtime
