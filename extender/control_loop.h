// The program's own small thread: signals and periodic chores, kept off the
// request threads so that a busy server never delays a SIGTERM or a reload.
#pragma once

#include <functional>
#include <memory>

#include "absl/time/time.h"

namespace tessera {

/// What the control loop does, and how often. Empty callbacks are skipped.
struct ControlActions {
  /// On SIGTERM or SIGINT, once; the loop then stops its timers.
  std::function<void(int signal)> on_stop;
  /// On SIGHUP.
  std::function<void()> on_hup;
  /// Every `poll_every` (zero or less: never).
  std::function<void()> on_poll;
  absl::Duration poll_every = absl::ZeroDuration();
  /// Every `chore_every` (zero or less: never): housekeeping such as expiring
  /// reservations the watch never confirmed.
  std::function<void()> on_chore;
  absl::Duration chore_every = absl::ZeroDuration();
};

/// Runs ControlActions on a thread of its own until destroyed.
class ControlLoop {
 public:
  /// Installs the signal handlers and starts the thread.
  explicit ControlLoop(ControlActions actions);
  /// Stops the thread; an action in progress finishes first.
  ~ControlLoop();
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera
