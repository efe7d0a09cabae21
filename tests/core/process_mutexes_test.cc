// UseReleaseMutexes (core/process_mutexes.h): after it, taking two mutexes
// in both orders is not reported as a potential deadlock. Without it,
// Debian's Abseil (built without NDEBUG) aborts the process on the second
// order, which is how this test fails if the call does nothing there.
#include "core/process_mutexes.h"

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/testing/sanitizers.h"

namespace sluice::process_mutexes_test {
namespace {

TEST(ProcessMutexesTest, AfterItBothLockOrdersPass) {
  if (testing::kThreadSanitizer) {
    // TSan's own lock-order check reports the inversion this test makes on
    // purpose; the check under test is Abseil's, which the other builds run.
    GTEST_SKIP() << "ThreadSanitizer reports the deliberate lock-order "
                    "inversion itself";
  }
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
}  // namespace sluice::process_mutexes_test
