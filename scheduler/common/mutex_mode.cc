#include "scheduler/common/mutex_mode.h"

#include "absl/synchronization/mutex.h"

namespace tessera {

void UseReleaseMutexMode() {
  if constexpr (ReleaseMutexModeSkipsDeadlockDetection()) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
}

}  // namespace tessera
