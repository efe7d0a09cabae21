#include "core/process_mutexes.h"

#include "absl/synchronization/mutex.h"

namespace sluice {

void UseReleaseMutexes() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace sluice
