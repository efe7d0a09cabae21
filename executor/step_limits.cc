#include "executor/step_limits.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// Why the step stops, if it does: "...; it stopped <when> <what>" (when:
// "before", "after"). The message is built only then: this runs before
// every node of a step with limits.
template <typename What>
absl::Status Check(const StepLimits& limits, absl::string_view when, const What& what) {
  if (limits.cancellation != nullptr && limits.cancellation->cancelled()) {
    return absl::CancelledError(
        absl::StrCat("the step was cancelled; it stopped ", when, " ", what()));
  }
  if (limits.deadline != StepLimits::Clock::time_point::max() &&
      StepLimits::Clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("the step's deadline passed; it stopped ", when, " ", what()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StepLimits::CheckBefore(const Node& node) const {
  // A step with only a fault injector has nothing to check here.
  if (!watches_the_clock_or_a_flag()) return absl::OkStatus();
  return Check(*this, "before", [&] { return node.DebugName(); });
}

absl::Status StepLimits::CheckBeforeStep() const {
  return CheckBefore("its first node");
}

absl::Status StepLimits::CheckBefore(absl::string_view what) const {
  if (!watches_the_clock_or_a_flag()) return absl::OkStatus();
  return Check(*this, "before", [&] { return what; });
}

absl::Status StepLimits::CheckAfter(absl::string_view what) const {
  if (!watches_the_clock_or_a_flag()) return absl::OkStatus();
  return Check(*this, "after", [&] { return what; });
}

}  // namespace sluice
