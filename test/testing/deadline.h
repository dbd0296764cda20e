// Running code that might hang, under a deadline the test enforces.
//
// A thread stuck in a loop cannot be stopped, so the code runs in a forked
// child process: on the deadline the child is killed and the test goes on
// (and fails) instead of hanging until ctest's timeout.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "test/testing/eventually.h"

namespace tessera::testing {

/// How a bounded run ended.
struct BoundedRun {
  bool finished = false;      ///< Exited by itself before the deadline.
  int exit_code = -1;         ///< The child's exit status (when finished).
  int64_t peak_rss_mib = 0;   ///< The child's peak resident memory.
  std::string what;           ///< For failure messages: "exit 0", "killed at the deadline", "signal 11".
};

/// Runs `body` in a child process; its return value is the exit code (0 for
/// success by convention). Waits at most `deadline`, then kills the child.
/// Only the return value comes back: gtest assertions inside `body` are lost.
inline BoundedRun RunWithDeadline(const std::function<int()>& body, std::chrono::milliseconds deadline) {
  BoundedRun run;
  const pid_t pid = ::fork();
  if (pid < 0) {
    run.what = "fork failed";
    return run;
  }
  if (pid == 0) {
    const int code = body();
    ::_exit(code);  // no atexit handlers or leak checks: the parent owns those
  }
  int status = 0;
  struct rusage usage {};
  if (!WaitFor([&] { return ::wait4(pid, &status, WNOHANG, &usage) == pid; }, deadline)) {
    ::kill(pid, SIGKILL);
    ::wait4(pid, &status, 0, &usage);
    run.peak_rss_mib = usage.ru_maxrss / 1024;
    run.what = "killed at the deadline";
    return run;
  }
  run.peak_rss_mib = usage.ru_maxrss / 1024;
  if (WIFEXITED(status)) {
    run.finished = true;
    run.exit_code = WEXITSTATUS(status);
    run.what = "exit " + std::to_string(run.exit_code);
  } else if (WIFSIGNALED(status)) {
    run.what = "signal " + std::to_string(WTERMSIG(status));
  }
  return run;
}

}  // namespace tessera::testing
