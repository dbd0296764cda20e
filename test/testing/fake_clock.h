// A Clock that moves only when the test says so, for code that stamps,
// expires or waits on time (scheduler/common/clock.h).
//
//   FakeClock clock;                        // starts at the real now
//   TelemetryRefresher r(model, metrics, Mode::kBackground, clock);
//   ... r.Configure(...)                    // its thread runs a round, then waits
//   ASSERT_TRUE(clock.WaitForWaiters(1));   // the round is done
//   clock.Advance(absl::Seconds(1));        // the wait times out: the next round runs
//   ASSERT_TRUE(clock.WaitForWaiters(2));
//
// Advance() wakes the waiters whose timeout it passes: each re-checks its
// deadline when its mutex is released, so Advance locks and unlocks each
// waiter's mutex. Destroy what waits on the clock before the clock.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "absl/time/clock.h"
#include "scheduler/common/clock.h"

namespace tessera::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::Now()) : now_(absl::ToUnixNanos(start)) {}

  absl::Time Now() const override { return absl::FromUnixNanos(now_.load()); }

  /// Moves time forward by `d` and wakes the waits it times out.
  void Advance(absl::Duration d) {
    now_.fetch_add(absl::ToInt64Nanoseconds(d));
    std::vector<absl::Mutex*> waiting;
    {
      std::lock_guard<std::mutex> lock(waiters_mu_);
      waiting = waiting_on_;
    }
    for (absl::Mutex* mu : waiting) {
      mu->Lock();
      mu->Unlock();  // the waiter's condition, its deadline included, is evaluated again
    }
  }

  bool AwaitWithTimeout(absl::Mutex& mu, const absl::Condition& condition, absl::Duration timeout) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    struct Wait {
      const absl::Condition* condition;
      const std::atomic<int64_t>* now;
      int64_t deadline;
    };
    const int64_t now = now_.load();
    const Wait wait{&condition, &now_,
                    timeout == absl::InfiniteDuration()
                        ? std::numeric_limits<int64_t>::max()
                        : now + std::min(absl::ToInt64Nanoseconds(timeout), std::numeric_limits<int64_t>::max() - now)};
    {
      std::lock_guard<std::mutex> lock(waiters_mu_);
      waiting_on_.push_back(&mu);
      ++waits_started_;
    }
    waits_changed_.notify_all();
    mu.Await(absl::Condition(
        +[](const Wait* w) { return w->condition->Eval() || w->now->load() >= w->deadline; }, &wait));
    {
      std::lock_guard<std::mutex> lock(waiters_mu_);
      waiting_on_.erase(std::find(waiting_on_.begin(), waiting_on_.end(), &mu));
    }
    return condition.Eval();
  }

  /// Blocks until AwaitWithTimeout has been entered `n` times in all, i.e. a
  /// loop that waits between rounds has finished its n-th round. False after
  /// 30 s of real time (a failure, not a timing: the loop is stuck).
  [[nodiscard]] bool WaitForWaiters(int64_t n) const {
    std::unique_lock<std::mutex> lock(waiters_mu_);
    return waits_changed_.wait_for(lock, std::chrono::seconds(30), [&] { return waits_started_ >= n; });
  }

 private:
  std::atomic<int64_t> now_;  // Unix nanoseconds
  mutable std::mutex waiters_mu_;
  mutable std::condition_variable waits_changed_;
  mutable std::vector<absl::Mutex*> waiting_on_;  // guarded by waiters_mu_
  mutable int64_t waits_started_ = 0;             // guarded by waiters_mu_
};

}  // namespace tessera::testing
