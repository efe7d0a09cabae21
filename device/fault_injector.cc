#include "device/fault_injector.h"

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

thread_local FaultInjector* thread_faults = nullptr;

}  // namespace

std::string FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kAllocation: return "allocation";
    case FaultKind::kCopy: return "copy";
    case FaultKind::kKernel: return "kernel launch";
    case FaultKind::kLibrary: return "library call";
    case FaultKind::kSchedule: return "scheduling";
  }
  return "unknown";
}

FaultInjector::FaultInjector(FaultKinds kinds, int64_t fail_at)
    : kinds_(kinds), fail_at_(fail_at) {}

absl::Status FaultInjector::Check(FaultKind kind, absl::string_view what) {
  calls_[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
  if ((kinds_ & FaultBit(kind)) == 0) return absl::OkStatus();
  const int64_t n = selected_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n != fail_at_) return absl::OkStatus();
  {
    absl::MutexLock lock(&mu_);
    fired_ = true;
    fired_kind_ = kind;
    fired_what_ = std::string(what);
  }
  const std::string message =
      absl::StrCat("injected fault: ", FaultKindName(kind), " ", n,
                   " failed (", what, ")");
  if (kind == FaultKind::kAllocation || kind == FaultKind::kSchedule) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

int64_t FaultInjector::calls(FaultKind kind) const {
  return calls_[static_cast<int>(kind)].load(std::memory_order_relaxed);
}

int64_t FaultInjector::selected_calls() const {
  return selected_.load(std::memory_order_relaxed);
}

bool FaultInjector::fired() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

FaultKind FaultInjector::fired_kind() const {
  absl::MutexLock lock(&mu_);
  return fired_kind_;
}

std::string FaultInjector::fired_what() const {
  absl::MutexLock lock(&mu_);
  return fired_what_;
}

FaultInjector* ThreadFaultInjector() { return thread_faults; }

FaultScope::FaultScope(FaultInjector* faults) : previous_(thread_faults) {
  thread_faults = faults;
}

FaultScope::~FaultScope() { thread_faults = previous_; }

absl::Status InjectedFault(FaultKind kind, absl::string_view what) {
  FaultInjector* faults = thread_faults;
  if (faults == nullptr) return absl::OkStatus();
  return faults->Check(kind, what);
}

}  // namespace sluice
