#include "scheduler/common/mutex_mode.h"

#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// Takes two mutexes in one order, then in the other: the inversion abseil's
// deadlock detection aborts on (the order alone, no deadlock, is enough).
void InvertLockOrder() {
  absl::Mutex a, b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
}

// Each case runs in a child process: the mode is process-wide, and the tests
// around it keep abseil's check.
TEST(MutexModeTest, ALockOrderInversionAbortsUnderAbseilsDefaultAsBuiltByDebian) {
  EXPECT_DEATH(InvertLockOrder(), "Potential Mutex deadlock");
}

TEST(MutexModeTest, TheReleaseModeSkipsTheCheckOnlyInAnOptimisedBuild) {
  if (ReleaseMutexModeSkipsDeadlockDetection()) {
    EXPECT_EXIT(
        {
          UseReleaseMutexMode();
          InvertLockOrder();
          std::exit(0);
        },
        ::testing::ExitedWithCode(0), "");
  } else {
    EXPECT_DEATH(
        {
          UseReleaseMutexMode();
          InvertLockOrder();
        },
        "Potential Mutex deadlock");
  }
}

}  // namespace
}  // namespace tessera
