// luminal._C._cpu_gemv_rows: the most rows of each kind of prompt Matmul the cpu runtime's GEMV
// kernels take on this machine (runtime/cpu/build_program.h cpu_gemv_rows), so that tests of
// which path a prompt takes read the runtime's limits instead of restating them per CPU.
#include <pybind11/pybind11.h>

#include <string>

#include "runtime/cpu/build_program.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_gemv_rows(py::module_& m) {
  m.def(
      "_cpu_gemv_rows",
      [](const std::string& cpu_isa) {
        using namespace runtime::cpu;
        const passes::GemvRows rows = cpu_gemv_rows(parse_cpu_isa(cpu_isa), native_half_matmuls());
        py::dict limits;
        limits["half"] = rows.half;
        limits["f32"] = rows.f32;
        limits["f32_values"] = rows.f32_values;
        limits["quantized_f32"] = rows.quantized_f32;
        limits["quantized_bf16"] = rows.quantized_bf16;
        limits["bf16_pairs"] = rows.bf16_pairs;
        limits["bf16_pair_columns"] = rows.bf16_pair_columns;
        limits["f32_columns"] = rows.f32_columns;
        return limits;
      },
      py::arg("cpu_isa") = "native",
      "The most rows of each kind of prompt Matmul the cpu runtime's GEMV kernels take here, by the "
      "fields of passes::GemvRows (f32_values: the most rows x K of an f32 one, 0 for no bound).");
}

}  // namespace luminal::bindings
