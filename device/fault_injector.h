// FaultInjector: makes the Nth call at the execution providers' boundary
// fail, for tests (as SQLite's test harness fails its Nth allocation and
// Nth I/O call). The boundary's calls are of five kinds: an allocation of a
// step's tensor, a copy between devices, a kernel's launch (its Compute), a
// call into a library (oneDNN, cuBLAS, cuDNN, NVRTC) and the scheduling of a
// node on the inter-op threads. A test hands an injector to one step
// (StepOptions::faults, sluice/session.h); the executor makes it the
// current injector of the thread that runs each node of that step
// (FaultScope), and each boundary asks InjectedFault(kind, what) before it
// acts: OK, or the injected error, which then takes the path a real failure
// of that call takes.
//
//   FaultInjector faults(FaultBit(FaultKind::kAllocation), /*fail_at=*/3);
//   StepOptions options;
//   options.faults = &faults;
//   absl::StatusOr<std::vector<Tensor>> out = session->Run(feeds, {}, options);
//   // out: RESOURCE_EXHAUSTED "node 'fc1' (MatMul): injected fault: ...",
//   // unless the step made fewer than 3 allocations (faults.fired() false).
//
// Nothing in the product installs one: a step without StepOptions::faults
// pays one branch on a null pointer per node and one thread-local read per
// boundary call (an allocation, a copy, a library call).
//
// Thread-safe: Check may be called from any number of threads at once (the
// call counts are atomic; exactly one call is the Nth).
#ifndef SLUICE_DEVICE_FAULT_INJECTOR_H_
#define SLUICE_DEVICE_FAULT_INJECTOR_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace sluice {

// The kinds of call at the providers' boundary.
enum class FaultKind : int {
  kAllocation = 0,  // a step's tensor (a kernel's output or temp, a copy's)
  kCopy,            // a copy between devices (host, GPU, logical CPUs)
  kKernel,          // a kernel's launch: its Compute reports failure
  kLibrary,         // oneDNN, cuBLAS(Lt), cuDNN, NVRTC
  kSchedule,        // a node handed to the inter-op threads
};
inline constexpr int kNumFaultKinds = 5;

// "allocation", "copy", "kernel launch", "library call", "scheduling".
std::string FaultKindName(FaultKind kind);

// A set of kinds, one bit each.
using FaultKinds = uint32_t;
constexpr FaultKinds FaultBit(FaultKind kind) {
  return FaultKinds{1} << static_cast<int>(kind);
}
inline constexpr FaultKinds kAllFaultKinds = (FaultKinds{1} << kNumFaultKinds) - 1;

class FaultInjector {
 public:
  // Counts every call, and fails the `fail_at`th call (1-based) among those
  // of `kinds`, once; later calls succeed. fail_at 0: fails none, only
  // counts (how many calls a step makes, the bound of a sweep).
  FaultInjector(FaultKinds kinds, int64_t fail_at);
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // OK, or the error of the chosen call: RESOURCE_EXHAUSTED for an
  // allocation or a scheduling, INTERNAL for the others, naming the kind,
  // the call's number and `what`.
  absl::Status Check(FaultKind kind, absl::string_view what);

  // Calls of `kind` so far, and of the selected kinds together.
  int64_t calls(FaultKind kind) const;
  int64_t selected_calls() const;
  // Whether the chosen call has happened (and failed), and which it was.
  bool fired() const;
  FaultKind fired_kind() const;
  std::string fired_what() const;

 private:
  // Fixed at construction.
  const FaultKinds kinds_;
  const int64_t fail_at_;

  std::array<std::atomic<int64_t>, kNumFaultKinds> calls_{};
  std::atomic<int64_t> selected_{0};
  mutable absl::Mutex mu_;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  FaultKind fired_kind_ ABSL_GUARDED_BY(mu_) = FaultKind::kAllocation;
  std::string fired_what_ ABSL_GUARDED_BY(mu_);
};

// The calling thread's injector (the step node it runs has one), or null.
FaultInjector* ThreadFaultInjector();

// Makes `faults` the calling thread's injector while it lives (scopes nest;
// the innermost wins; null: none). The executor opens one around each node
// of a step that has an injector.
class FaultScope {
 public:
  explicit FaultScope(FaultInjector* faults);
  ~FaultScope();
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;

 private:
  FaultInjector* const previous_;
};

// Asked at the boundary before a call of `kind` (`what`: "cuBLAS GEMM"):
// OK when the thread has no injector, else its Check.
absl::Status InjectedFault(FaultKind kind, absl::string_view what);

}  // namespace sluice

#endif  // SLUICE_DEVICE_FAULT_INJECTOR_H_
