// The built-in CPU runtime factories, handed to Python as capsules.
#pragma once

#include "runtime/factory_abi.h"

namespace luminal::runtime {

// The optimising CPU runtime (generated C++ kernels); _C.cpu_factory_capsule().
const LuminalRuntimeFactory* cpu_runtime_factory();
// The reference interpreter, the oracle: options={"runtime": "reference"};
// _C.reference_factory_capsule().
const LuminalRuntimeFactory* reference_runtime_factory();

}  // namespace luminal::runtime
