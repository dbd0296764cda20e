// RequestPool: whole requests on threads of their own, from a bounded queue.
#include "extender/service/request_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// A latch the pool's tasks wait on, counting how many wait at once.
class Gate {
 public:
  void Pass() {
    absl::MutexLock lock(&mu_);
    ++waiting_;
    mu_.Await(absl::Condition(&open_));
    --waiting_;
  }
  bool WaitForWaiting(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiting_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }

 private:
  absl::Mutex mu_;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(RequestPoolTest, RunsAsManyTasksAtOnceAsItHasThreads) {
  MetricsRegistry metrics;
  Gate gate;
  std::atomic<int> done{0};
  {
    RequestPool pool("bind", 16, 16, metrics);
    for (int i = 0; i < 16; ++i) {
      ASSERT_TRUE(pool.TrySubmit([&] {
        gate.Pass();
        ++done;
      }));
    }
    // All sixteen wait at the gate together: none waits for another to end.
    EXPECT_TRUE(gate.WaitForWaiting(16));
    EXPECT_EQ(pool.queued(), 0u);
    EXPECT_THAT(metrics.Render(), HasSubstr(R"(tessera_request_pool_running{pool="bind"} 16)"));
    gate.Open();
  }  // joined
  EXPECT_EQ(done.load(), 16);
}

TEST(RequestPoolTest, RefusesATaskPastItsQueueAndCountsIt) {
  MetricsRegistry metrics;
  Gate gate;
  RequestPool pool("bind", 1, 2, metrics);
  ASSERT_TRUE(pool.TrySubmit([&] { gate.Pass(); }));
  ASSERT_TRUE(gate.WaitForWaiting(1));  // the thread is busy
  EXPECT_TRUE(pool.TrySubmit([] {}));
  EXPECT_TRUE(pool.TrySubmit([] {}));
  EXPECT_EQ(pool.queued(), 2u);
  bool ran = false;
  EXPECT_FALSE(pool.TrySubmit([&] { ran = true; }));
  EXPECT_THAT(metrics.Render(), HasSubstr(R"(tessera_request_pool_rejected_total{pool="bind"} 1)"));
  EXPECT_THAT(metrics.Render(), HasSubstr(R"(tessera_request_pool_queued{pool="bind"} 2)"));
  gate.Open();
  EXPECT_FALSE(ran);
}

TEST(RequestPoolTest, DestroyingItDropsWaitingTasksUnrunAndWaitsForRunningOnes) {
  MetricsRegistry metrics;
  Gate gate;
  std::atomic<bool> running_finished{false};
  // What the waiting task captures tells when it is destroyed.
  absl::Notification dropped;
  std::shared_ptr<int> dropped_capture(new int(0), [&dropped](int* p) {
    delete p;
    dropped.Notify();
  });
  bool dropped_ran = false;
  absl::Notification destroyed;
  auto pool = std::make_unique<RequestPool>("verbs", 1, 4, metrics);
  ASSERT_TRUE(pool->TrySubmit([&] {
    gate.Pass();
    running_finished = true;
  }));
  ASSERT_TRUE(gate.WaitForWaiting(1));
  ASSERT_TRUE(pool->TrySubmit([&, capture = std::move(dropped_capture)] { dropped_ran = true; }));
  std::thread destroyer([&] {
    pool.reset();
    destroyed.Notify();
  });
  // The running task holds the destructor up; the waiting one is gone already.
  EXPECT_TRUE(dropped.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(destroyed.HasBeenNotified());
  gate.Open();
  destroyer.join();
  EXPECT_TRUE(running_finished.load());
  EXPECT_FALSE(dropped_ran);
}

}  // namespace
}  // namespace tessera
