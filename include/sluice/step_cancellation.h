// StepCancellation: a flag that stops running steps when another thread
// raises it. Give it to a step in StepOptions::cancellation (sluice/session.h);
// Cancel() from any thread makes the step stop before its next node on the
// CPU, with CANCELLED naming that node; the session stays usable.
//
//   sluice::StepCancellation cancel;
//   std::thread stopper([&] { WaitForUser(); cancel.Cancel(); });
//   sluice::StepOptions options;
//   options.cancellation = &cancel;
//   auto out = session->Run(feeds, {}, options);  // CANCELLED once stopped
//
// Thread-safe: Cancel, Reset and cancelled may be called from any thread.
// One flag may serve several steps at once; it stays raised until Reset.
#ifndef SLUICE_STEP_CANCELLATION_H_
#define SLUICE_STEP_CANCELLATION_H_

#include <atomic>

namespace sluice {

class StepCancellation {
 public:
  StepCancellation() = default;
  StepCancellation(const StepCancellation&) = delete;
  StepCancellation& operator=(const StepCancellation&) = delete;

  // Stops every step that holds this flag, at its next check.
  void Cancel() noexcept { cancelled_.store(true, std::memory_order_release); }
  // Lowers the flag, for steps started from now on.
  void Reset() noexcept { cancelled_.store(false, std::memory_order_release); }
  bool cancelled() const noexcept {
    return cancelled_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace sluice

#endif  // SLUICE_STEP_CANCELLATION_H_
