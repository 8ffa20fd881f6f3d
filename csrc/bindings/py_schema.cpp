// luminal._C.schema_info(): the PT2 schema enums the reader was written against, so a test can
// compare them with torch._export.serde.schema and a schema change fails CI, not a model.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "pt2/schema.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_schema(py::module_& m) {
  m.def(
      "schema_info",
      [] {
        py::dict scalar_types;
        // Codes are small and sparse (0..13, 28..35); scan a margin beyond the last.
        for (int code = 0; code < 64; ++code)
          if (pt2::is_known_scalar_type(code))
            scalar_types[py::str(pt2::scalar_type_name(static_cast<pt2::ScalarType>(code)))] = code;
        py::list argument_keys;
        for (int kind = 0; kind <= static_cast<int>(pt2::Argument::Kind::StringToArgument); ++kind)
          argument_keys.append(pt2::argument_key(static_cast<pt2::Argument::Kind>(kind)));
        py::dict info;
        info["major"] = pt2::kSupportedSchemaMajor;
        info["scalar_types"] = scalar_types;
        info["argument_keys"] = argument_keys;
        return info;
      },
      "The schema major version, ScalarType codes and Argument keys the PT2 reader understands.");
}

}  // namespace luminal::bindings
