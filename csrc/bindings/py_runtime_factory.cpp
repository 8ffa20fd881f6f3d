#include "bindings/py_runtime_factory.h"

#include "common/error.h"
#include "runtime/cpu_factory.h"

namespace py = pybind11;

namespace luminal::bindings {

RuntimeHandle runtime_from_capsule(const py::object& capsule) {
  USER_CHECK(PyCapsule_CheckExact(capsule.ptr()))
      << "expected a runtime factory capsule named '" LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME "', got "
      << std::string(py::str(py::type::of(capsule)));
  const char* name = PyCapsule_GetName(capsule.ptr());
  USER_CHECK(name != nullptr && std::string(name) == LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME)
      << "capsule is named '" << (name ? name : "<null>") << "', expected '" LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME "'";
  auto* factory = static_cast<const LuminalRuntimeFactory*>(PyCapsule_GetPointer(capsule.ptr(), name));
  USER_CHECK(factory != nullptr) << "runtime factory capsule holds a null pointer";
  USER_CHECK(factory->abi_version == LUMINAL_RUNTIME_FACTORY_ABI_VERSION)
      << "runtime factory '" << (factory->name ? factory->name : "?") << "' has ABI version " << factory->abi_version
      << ", this luminal expects " << LUMINAL_RUNTIME_FACTORY_ABI_VERSION << "; rebuild the plugin against this luminal";
  void* created = factory->create();
  USER_CHECK(created != nullptr) << "runtime factory '" << factory->name << "' failed to create a runtime";
  auto destroy = factory->destroy;
  RuntimeHandle handle;
  handle.factory = factory;
  handle.runtime = std::shared_ptr<runtime::Runtime>(static_cast<runtime::Runtime*>(created),
                                                     [destroy](runtime::Runtime* r) { destroy(r); });
  return handle;
}

void define_runtime_factory(py::module_& m) {
  m.def(
      "cpu_factory_capsule",
      [] {
        return py::capsule(const_cast<LuminalRuntimeFactory*>(runtime::cpu_runtime_factory()),
                           LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME);
      },
      "The built-in CPU runtime factory, as a PyCapsule named 'luminal.runtime_factory'.");
  m.def(
      "reference_factory_capsule",
      [] {
        return py::capsule(const_cast<LuminalRuntimeFactory*>(runtime::reference_runtime_factory()),
                           LUMINAL_RUNTIME_FACTORY_CAPSULE_NAME);
      },
      "The reference interpreter (slow, the test oracle), as a runtime factory capsule.");
  m.def(
      "factory_info",
      [](const py::object& capsule) {
        RuntimeHandle handle = runtime_from_capsule(capsule);
        py::dict info;
        info["name"] = handle.factory->name;
        info["device"] = handle.factory->device;
        info["runtime"] = handle.runtime->name();
        return info;
      },
      "Validates a runtime factory capsule and returns its name, device and runtime name.");
}

}  // namespace luminal::bindings
