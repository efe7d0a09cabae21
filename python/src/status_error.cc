#include "python/src/status_error.h"

#include <string>

#include "nanobind/stl/string.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

// The factory sluice/errors.py registers; leaked on purpose so that no
// Python object is released after the interpreter has gone.
nb::object* error_factory = nullptr;

void Translate(const std::exception_ptr& p, void* /*payload*/) {
  try {
    std::rethrow_exception(p);
  } catch (const StatusError& e) {
    const absl::Status& s = e.status();
    const std::string message(s.message());
    if (error_factory == nullptr) {
      PyErr_SetString(PyExc_RuntimeError, message.c_str());
      return;
    }
    nb::object exc = (*error_factory)(static_cast<int>(s.code()), message);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  }
}

}  // namespace

void RegisterStatusErrors(nb::module_& m) {
  nb::register_exception_translator(&Translate);
  m.def(
      "_set_error_factory",
      [](nb::object factory) {
        if (error_factory == nullptr) error_factory = new nb::object();
        *error_factory = std::move(factory);
      },
      "Internal: the callable (code, message) -> exception sluice raises.");
}

}  // namespace sluice::python
