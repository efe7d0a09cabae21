#include "python/src/sigint_cancels.h"

#include <atomic>

namespace sluice::python {
namespace {

// The scope's flag and the handler it replaced; set before the handler is
// installed and read only by it.
std::atomic<StepCancellation*> g_cancel{nullptr};
struct sigaction g_previous;

void OnSigint(int sig, siginfo_t* info, void* context) {
  if (StepCancellation* cancel = g_cancel.load(std::memory_order_acquire)) {
    cancel->Cancel();
  }
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
}

}  // namespace

SigintCancels::SigintCancels(StepCancellation* cancel) {
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool has_function = (current.sa_flags & SA_SIGINFO) ||
                            (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!has_function) return;
  g_previous = current;
  g_cancel.store(cancel, std::memory_order_release);
  struct sigaction mine = {};
  mine.sa_sigaction = OnSigint;
  mine.sa_flags = current.sa_flags | SA_SIGINFO;
  sigemptyset(&mine.sa_mask);
  installed_ = sigaction(SIGINT, &mine, nullptr) == 0;
  if (!installed_) g_cancel.store(nullptr, std::memory_order_release);
}

SigintCancels::~SigintCancels() {
  if (!installed_) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_cancel.store(nullptr, std::memory_order_release);
}

}  // namespace sluice::python
