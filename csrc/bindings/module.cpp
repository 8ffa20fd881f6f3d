// luminal._C: marshalling only. Each bound concept has its own py_<thing>.cpp.
#include <pybind11/pybind11.h>

#include "bindings/py_errors.h"
#include "bindings/py_runtime_factory.h"
#include "runtime/aten_fallback/c10_dispatch.h"

namespace luminal::bindings {
void define_aten_threads(pybind11::module_& m);
void define_compiled_program(pybind11::module_& m);
void define_cuda(pybind11::module_& m);
void define_gemv_rows(pybind11::module_& m);
void define_output_memory(pybind11::module_& m);
void define_schema(pybind11::module_& m);
void define_warnings(pybind11::module_& m);
void install_collective_executor();
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "luminal's C++ core: PT2 reader, translator, runtimes";
  luminal::bindings::define_errors(m);
  luminal::bindings::define_warnings(m);
  luminal::bindings::define_runtime_factory(m);
  luminal::bindings::define_compiled_program(m);
  luminal::bindings::define_aten_threads(m);
  luminal::bindings::define_schema(m);
  luminal::bindings::define_cuda(m);
  luminal::bindings::define_output_memory(m);
  luminal::bindings::define_gemv_rows(m);
  luminal::runtime::aten_fallback::install_c10_dispatch_executor();
  luminal::bindings::install_collective_executor();
}
