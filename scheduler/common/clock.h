// Time as code that stamps, expires or waits reads it: the system's in the
// program, a clock the test drives in tests (test/testing/fake_clock.h), so
// that a test of "stale after 1 s" or "every 1 s" advances time instead of
// sleeping through it.
#pragma once

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera {

class Clock {
 public:
  virtual ~Clock() = default;

  /// The current time.
  [[nodiscard]] virtual absl::Time Now() const = 0;

  /// absl::Mutex::AwaitWithTimeout on this clock: with `mu` held, waits
  /// (releasing it meanwhile) until `condition` holds or `timeout` has passed
  /// by Now(). \return whether `condition` holds.
  virtual bool AwaitWithTimeout(absl::Mutex& mu, const absl::Condition& condition,
                                absl::Duration timeout) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;

  /// The system clock (absl::Now()); lives for the whole program.
  static const Clock& Real();
};

}  // namespace tessera
