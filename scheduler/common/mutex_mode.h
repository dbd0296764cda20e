// How abseil's mutexes run in Tessera's programs.
//
// abseil checks every absl::Mutex acquisition against a global graph of lock
// orders (deadlock detection) unless it was built with NDEBUG, and Debian 12
// builds libabsl without it: the check, which takes a process-wide lock of
// its own, made each lock ~3.5 times as costly here (a nested pair of
// acquisitions 74 ns against 21 ns). Abseil's own release default is to skip
// it; the programs restore that in optimised builds, while the tests keep the
// check and so still fail on a lock-order inversion.
#pragma once

namespace tessera {

/// In a build with NDEBUG: abseil's deadlock detection off (its release
/// default). Otherwise: nothing. Call once, first thing in main().
void UseReleaseMutexMode();

/// Whether UseReleaseMutexMode turns detection off in this build.
[[nodiscard]] constexpr bool ReleaseMutexModeSkipsDeadlockDetection() {
#ifdef NDEBUG
  return true;
#else
  return false;
#endif
}

}  // namespace tessera
