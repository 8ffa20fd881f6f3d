#include "runtime/cpu_factory.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/cpu/cpu_runtime.h"
#include "runtime/reference/reference_runtime.h"

namespace luminal::runtime {

namespace {

// Nothing may unwind across the C ABI: a failure is reported as null.
// LUMINAL_CPU_RUNTIME=reference switches the "cpu" factory to the interpreter, for bisecting
// a wrong answer to the generated kernels without touching the model code.
void* create_cpu_runtime() noexcept {
  try {
    const char* choice = std::getenv("LUMINAL_CPU_RUNTIME");
    if (choice != nullptr && std::strcmp(choice, "reference") == 0)
      return static_cast<Runtime*>(new reference::ReferenceRuntime());
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
