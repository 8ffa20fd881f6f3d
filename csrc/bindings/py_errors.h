#pragma once

#include <pybind11/pybind11.h>

namespace luminal::bindings {
// Maps luminal::UserError / UnsupportedError / InternalError onto the classes of the same
// names in luminal.errors, and luminal::Interrupted onto KeyboardInterrupt.
void define_errors(pybind11::module_& m);
}  // namespace luminal::bindings
