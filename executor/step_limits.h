// StepLimits: when a step must stop before its end. A deadline and a
// cancellation flag (StepOptions's, sluice/session.h), checked by the
// executor (RunPlan) before each node: a step past its deadline stops with
// DEADLINE_EXCEEDED, a cancelled one with CANCELLED, either naming the node
// it stopped before; what the step held is freed as after a kernel error.
// For tests, a fault injector (StepOptions::faults, device/fault_injector.h):
// the executor makes it the current one of the thread running each node,
// and a call it fails stops the step the same way.
//
//   StepLimits limits = StepLimits::From(options);
//   RETURN_IF_ERROR(limits.CheckBefore(*pn.node));
//
// Thread-safe: CheckBefore is const and reads only atomics and the clock.
#ifndef SLUICE_EXECUTOR_STEP_LIMITS_H_
#define SLUICE_EXECUTOR_STEP_LIMITS_H_

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "device/fault_injector.h"
#include "graph/graph.h"
#include "sluice/session.h"
#include "sluice/step_cancellation.h"

namespace sluice {

struct StepLimits {
  using Clock = std::chrono::steady_clock;

  Clock::time_point deadline = Clock::time_point::max();
  const StepCancellation* cancellation = nullptr;  // not owned
  FaultInjector* faults = nullptr;                  // not owned; tests

  static StepLimits From(const StepOptions& options) {
    StepLimits limits;
    limits.deadline = options.deadline;
    limits.cancellation = options.cancellation;
    limits.faults = options.faults;
    return limits;
  }

  // Whether a deadline or a cancellation flag is set.
  bool watches_the_clock_or_a_flag() const {
    return cancellation != nullptr || deadline != Clock::time_point::max();
  }

  // Whether there is anything to check.
  bool active() const { return watches_the_clock_or_a_flag() || faults != nullptr; }

  // OK, or why the step stops before `node`: CANCELLED when the flag is
  // raised (checked first), DEADLINE_EXCEEDED when the deadline has passed.
  absl::Status CheckBefore(const Node& node) const;
  // The same before the step's first node, for steps that do not run node
  // by node (a replayed CUDA graph).
  absl::Status CheckBeforeStep() const;
  // The same before `what` ("the outputs of a subgraph with no nodes").
  absl::Status CheckBefore(absl::string_view what) const;
  // The same once `what` has run (a replayed CUDA graph, which has no node
  // boundaries: a cancellation or deadline that came while it ran is seen
  // when it ends, and the step's results are dropped).
  absl::Status CheckAfter(absl::string_view what) const;
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_STEP_LIMITS_H_
