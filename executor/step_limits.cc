#include "executor/step_limits.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// `where`: "before node 'x' (Op)", "after the step's CUDA graph (...)".
absl::Status Check(const StepLimits& limits, const std::string& where) {
  if (limits.cancellation != nullptr && limits.cancellation->cancelled()) {
    return absl::CancelledError(
        absl::StrCat("the step was cancelled; it stopped ", where));
  }
  if (limits.deadline != StepLimits::Clock::time_point::max() &&
      StepLimits::Clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("the step's deadline passed; it stopped ", where));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StepLimits::CheckBefore(const Node& node) const {
  // A step with only a fault injector has nothing to check here.
  if (cancellation == nullptr && deadline == Clock::time_point::max()) {
    return absl::OkStatus();
  }
  return Check(*this, absl::StrCat("before ", node.DebugName()));
}

absl::Status StepLimits::CheckBeforeStep() const {
  return CheckBefore("its first node");
}

absl::Status StepLimits::CheckBefore(absl::string_view what) const {
  if (cancellation == nullptr && deadline == Clock::time_point::max()) {
    return absl::OkStatus();
  }
  return Check(*this, absl::StrCat("before ", what));
}

absl::Status StepLimits::CheckAfter(absl::string_view what) const {
  if (cancellation == nullptr && deadline == Clock::time_point::max()) {
    return absl::OkStatus();
  }
  return Check(*this, absl::StrCat("after ", what));
}

}  // namespace sluice
