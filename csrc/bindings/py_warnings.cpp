// Routes the core's warnings (common/warning.h) to Python's `luminal` logger.
#include <pybind11/pybind11.h>

#include "common/warning.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_warnings(py::module_& m) {
  set_warning_handler([](const std::string& message) {
    // Compiles run without the GIL, and at interpreter shutdown there is no logger to call:
    // stderr then, so that the warning is never lost.
    if (!Py_IsInitialized() || _Py_IsFinalizing()) {
      std::fprintf(stderr, "luminal warning: %s\n", message.c_str());
      return;
    }
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("logging").attr("getLogger")("luminal").attr("warning")("%s", message);
    } catch (const py::error_already_set&) {
      std::fprintf(stderr, "luminal warning: %s\n", message.c_str());
    }
  });
}

}  // namespace luminal::bindings
