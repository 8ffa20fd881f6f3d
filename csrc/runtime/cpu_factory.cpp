#include "runtime/cpu_factory.h"

#include <new>

#include "runtime/cpu/cpu_runtime.h"
#include "runtime/reference/reference_runtime.h"

namespace luminal::runtime {

namespace {

// Nothing may unwind across the C ABI: a failure is reported as null. The interpreter is its
// own factory, chosen with options={"runtime": "reference"}, never by the environment.
void* create_cpu_runtime() noexcept {
  try {
    return static_cast<Runtime*>(new cpu::CpuRuntime());
  } catch (...) {
    return nullptr;
  }
}

void* create_reference_runtime() noexcept {
  try {
    return static_cast<Runtime*>(new reference::ReferenceRuntime());
  } catch (...) {
    return nullptr;
  }
}

void destroy_runtime(void* runtime) noexcept { delete static_cast<Runtime*>(runtime); }

const LuminalRuntimeFactory kCpuFactory{LUMINAL_RUNTIME_FACTORY_ABI_VERSION, "cpu", "cpu", create_cpu_runtime,
                                        destroy_runtime};
const LuminalRuntimeFactory kReferenceFactory{LUMINAL_RUNTIME_FACTORY_ABI_VERSION, "reference", "cpu",
                                              create_reference_runtime, destroy_runtime};

}  // namespace

const LuminalRuntimeFactory* cpu_runtime_factory() { return &kCpuFactory; }
const LuminalRuntimeFactory* reference_runtime_factory() { return &kReferenceFactory; }

}  // namespace luminal::runtime
