#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "runtime/factory_abi.h"
#include "runtime/runtime.h"

namespace luminal::bindings {

// A runtime created from a factory capsule, destroyed through the same factory.
struct RuntimeHandle {
  const LuminalRuntimeFactory* factory = nullptr;
  std::shared_ptr<runtime::Runtime> runtime;
};

// Validates the capsule's name and ABI version; UserError naming what is wrong.
RuntimeHandle runtime_from_capsule(const pybind11::object& capsule);

void define_runtime_factory(pybind11::module_& m);

}  // namespace luminal::bindings
