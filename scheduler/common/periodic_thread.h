// A thread that runs one job every `period` until stopped: the shape of
// Tessera's background writers (the capacity publisher, the preemption loop).
// Stop() wakes it at once rather than after the period.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/common/thread_name.h"

namespace tessera {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  /// Runs `job` now and then every `period` after each run ends, on a
  /// thread of its own called `name` (thread_name.h). A second Start()
  /// while running does nothing.
  void Start(std::string name, absl::Duration period, std::function<void()> job) {
    if (thread_.joinable()) return;
    stop_ = false;
    thread_ = std::thread([this, name = std::move(name), period, job = std::move(job)] {
      NameThisThread(name);
      while (true) {
        job();
        absl::MutexLock lock(&wake_mu_);
        if (wake_mu_.AwaitWithTimeout(absl::Condition(+[](std::atomic<bool>* s) { return s->load(); }, &stop_),
                                      period)) {
          return;
        }
      }
    });
  }

  /// Wakes the thread and waits for the run in progress, if any, to end.
  void Stop() {
    if (!thread_.joinable()) return;
    {
      absl::MutexLock lock(&wake_mu_);
      stop_ = true;
    }
    thread_.join();
  }

 private:
  absl::Mutex wake_mu_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera
