// luminal._C._large_output_bytes_kept: the freed output mapping the CPU outputs' allocator keeps
// for the next call (bindings/large_output_allocator.h), for tests of how much it holds.
#include <pybind11/pybind11.h>

#include "bindings/large_output_allocator.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_output_memory(py::module_& m) {
  m.def("_large_output_bytes_kept", &large_output_bytes_kept,
        "Bytes of the last freed large CPU output's mapping, kept for the next output that fits it (0 if none).");
}

}  // namespace luminal::bindings
