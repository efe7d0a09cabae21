// The Python face of a Session (sluice._sluice.Session; sluice/session.py
// wraps it): creation from a ModelSource and a RuntimeConfig text, the
// signature, `run` with the GIL released, the placement and bench reports
// (reports/) as dicts, and `copy_to` (Session::CopyTo) for IO binding.
//
//   m.def(...);  BindSession(m);   // in NB_MODULE
//
// run, placement and bench may be called from several Python
// threads at once (Session::Run is thread-safe; the rest is read-only
// after construction).
#ifndef SLUICE_PYTHON_SRC_PY_SESSION_H_
#define SLUICE_PYTHON_SRC_PY_SESSION_H_

#include "nanobind/nanobind.h"

namespace sluice::python {

void BindSession(nanobind::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_PY_SESSION_H_
