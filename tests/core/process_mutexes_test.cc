// UseReleaseMutexes (core/process_mutexes.h): after it, taking two mutexes
// in both orders is not reported as a potential deadlock. Without it,
// Debian's Abseil (built without NDEBUG) aborts the process on the second
// order, which is how this test fails if the call does nothing there.
#include "core/process_mutexes.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(ProcessMutexesTest, AfterItBothLockOrdersPass) {
  UseReleaseMutexes();
  absl::Mutex a, b;
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
  }
  // The rest of this binary's tests keep the check.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
  SUCCEED();
}

}  // namespace
}  // namespace sluice
