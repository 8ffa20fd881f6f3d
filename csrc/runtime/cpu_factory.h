// The built-in "cpu" runtime factory, handed to Python as _C.cpu_factory_capsule().
#pragma once

#include "runtime/factory_abi.h"

namespace luminal::runtime {

// Creates the reference runtime until the optimising CPU runtime replaces it.
const LuminalRuntimeFactory* cpu_runtime_factory();

}  // namespace luminal::runtime
