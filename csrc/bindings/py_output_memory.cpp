// luminal._C._huge_page_bytes_kept: the freed output mapping the CPU outputs' allocator keeps
// for the next call (bindings/huge_page_allocator.h), for tests of how much it holds.
#include <pybind11/pybind11.h>

#include "bindings/huge_page_allocator.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_output_memory(py::module_& m) {
  m.def("_huge_page_bytes_kept", &huge_page_bytes_kept,
        "Bytes of the last freed large CPU output's mapping, kept for the next output that fits it (0 if none).");
}

}  // namespace luminal::bindings
