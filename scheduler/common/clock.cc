#include "scheduler/common/clock.h"

#include "absl/time/clock.h"

namespace tessera {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithTimeout(absl::Mutex& mu, const absl::Condition& condition, absl::Duration timeout) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu.AwaitWithTimeout(condition, timeout);
  }
};

}  // namespace

const Clock& Clock::Real() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace tessera
