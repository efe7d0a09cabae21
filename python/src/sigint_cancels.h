// SigintCancels: while alive, a SIGINT (Ctrl-C) also raises a step's
// StepCancellation, so that Session.run stops the step it interrupts at the
// next node boundary instead of finishing it first. The SIGINT handler in
// place before (Python's, which raises KeyboardInterrupt once the step has
// returned and the interpreter runs again) is called too, and is restored
// when the scope ends.
//
//   StepCancellation cancel;
//   SigintCancels scope(&cancel);   // on Python's main thread, GIL held
//   { nb::gil_scoped_release release; result = session->Run(feeds, {}, options); }
//
// Thread safety: one scope at a time, on Python's main thread (the only
// thread Python delivers KeyboardInterrupt to); session.py makes scopes only
// there. The handler itself only stores to atomics.
#ifndef SLUICE_PYTHON_SRC_SIGINT_CANCELS_H_
#define SLUICE_PYTHON_SRC_SIGINT_CANCELS_H_

#include <signal.h>

#include "sluice/step_cancellation.h"

namespace sluice::python {

class SigintCancels {
 public:
  // Installs the handler when SIGINT has a handler function now (Python's);
  // with SIG_DFL or SIG_IGN in place it does nothing.
  explicit SigintCancels(StepCancellation* cancel);
  ~SigintCancels();
  SigintCancels(const SigintCancels&) = delete;
  SigintCancels& operator=(const SigintCancels&) = delete;

 private:
  bool installed_ = false;
};

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_SIGINT_CANCELS_H_
