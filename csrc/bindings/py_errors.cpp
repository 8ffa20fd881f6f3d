#include "bindings/py_errors.h"

#include "common/error.h"
#include "common/interrupted.h"

namespace py = pybind11;

namespace luminal::bindings {

void define_errors(py::module_& m) {
  // Leaked on purpose: the translator may run during interpreter shutdown, after module
  // globals are gone, and these must stay valid until then.
  static PyObject* user_error = nullptr;
  static PyObject* unsupported_error = nullptr;
  static PyObject* internal_error = nullptr;
  py::module_ errors = py::module_::import("luminal.errors");
  user_error = py::object(errors.attr("UserError")).release().ptr();
  unsupported_error = py::object(errors.attr("UnsupportedError")).release().ptr();
  internal_error = py::object(errors.attr("InternalError")).release().ptr();

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = e.kind() == ErrorKind::User          ? user_error
                       : e.kind() == ErrorKind::Unsupported ? unsupported_error
                                                            : internal_error;
      PyErr_SetString(type, e.what());
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
}

}  // namespace luminal::bindings
