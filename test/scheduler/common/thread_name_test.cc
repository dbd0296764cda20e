#include "scheduler/common/thread_name.h"

#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/common/periodic_thread.h"

namespace tessera {
namespace {

// The name as another thread reads it: what a thread calls itself.
std::string NameOnAThreadOfItsOwn(std::string_view name) {
  std::string seen;
  std::thread([&] {
    NameThisThread(name);
    seen = ThisThreadName();
  }).join();
  return seen;
}

TEST(ThreadNameTest, AThreadCarriesTheNameItGaveItself) { EXPECT_EQ(NameOnAThreadOfItsOwn("pool-bind"), "pool-bind"); }

TEST(ThreadNameTest, ANameLongerThanLinuxKeepsIsCutToFifteenBytes) {
  EXPECT_EQ(NameOnAThreadOfItsOwn("a-name-of-twenty-bytes"), "a-name-of-twent");
}

TEST(ThreadNameTest, APeriodicThreadRunsItsJobUnderItsName) {
  PeriodicThread thread;
  absl::Notification ran;
  std::string seen;
  thread.Start("capacity", absl::Hours(1), [&] {
    if (ran.HasBeenNotified()) return;
    seen = ThisThreadName();
    ran.Notify();
  });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  thread.Stop();
  EXPECT_EQ(seen, "capacity");
}

}  // namespace
}  // namespace tessera
