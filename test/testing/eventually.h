// Waiting in tests for what nothing in this process signals: another
// process (kube-apiserver, kube-scheduler, Prometheus, a child
// tessera-extender, a socket peer) or state a fake or a server keeps to
// itself. This header is the one place in test/ that sleeps to wait
// (scripts/check_test_sleeps.sh fails on a sleep anywhere else, bar the
// simulated delays it lists).
//
// Wait on an event where there is one: a latch or absl::Notification the
// code under test signals, or a FakeClock (fake_clock.h) for code that reads
// the injectable Clock. Poll only where there is none:
//
//   ASSERT_TRUE(Eventually([&] { return plane().TesseraGet("/readyz").status == 200; },
//                          absl::Seconds(30), "Tessera to be ready"));
//   EXPECT_TRUE(Consistently([&] { return Bound() == 4; }, absl::Seconds(2), "4 pods bound, no more"));
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera::testing {

/// Polls `condition` until it holds or `timeout` has passed: at once, then
/// after pauses from 1 ms doubling up to 100 ms (quick for what is nearly
/// there, gentle on a peer that takes seconds). The condition is evaluated
/// once more at the deadline. \return whether it held.
inline bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    if (condition()) return true;
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    absl::SleepFor(std::min(pause, deadline - now));
    pause = std::min(pause * 2, absl::Milliseconds(100));
  }
}

/// WaitFor with a std::chrono timeout.
inline bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  return WaitFor(condition, absl::FromChrono(timeout));
}

/// WaitFor as a gtest assertion, which on a timeout says what was awaited:
/// ASSERT_TRUE(Eventually(...)) << more context.
inline ::testing::AssertionResult Eventually(const std::function<bool()>& condition, absl::Duration timeout,
                                             std::string_view what) {
  if (WaitFor(condition, timeout)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "waited " << absl::FormatDuration(timeout) << " for " << what;
}

/// That `condition` holds at every poll for all of `period` (a thing that
/// must not happen, watched for a while rather than slept through): fails at
/// the first poll where it does not, saying what stopped holding and when.
inline ::testing::AssertionResult Consistently(const std::function<bool()>& condition, absl::Duration period,
                                               std::string_view what) {
  const absl::Time start = absl::Now();
  bool broke = false;
  (void)WaitFor([&] { return broke = !condition(); }, period);
  if (!broke) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no longer " << what << " after "
                                       << absl::FormatDuration(absl::Now() - start) << " (of "
                                       << absl::FormatDuration(period) << ")";
}

}  // namespace tessera::testing
