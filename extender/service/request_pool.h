// A fixed set of threads that run requests handed over by the HTTP I/O
// threads, from a bounded queue.
//
// Why: an I/O thread that waits (a bind's API call, ~14 ms on a real control
// plane) or computes for long (a filter over tens of MB of Node objects)
// cannot read the next request, and /healthz then waits behind it. The
// router sends such work here, and the I/O threads stay free.
//
// Bounded, so that a burst cannot queue without end: a task that does not fit
// is refused at once (TrySubmit returns false) and the caller answers "busy";
// kube-scheduler retries the pod. Unlike WorkerPool (scheduler/memo), which
// splits one request's loop, this runs whole requests, one per thread.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

class RequestPool {
 public:
  /// Starts `threads` threads (at least 1). At most `max_queued` tasks wait
  /// for a thread besides those running. `name` labels the metrics
  /// (tessera_request_pool_*{pool="<name>"}); `metrics` must outlive the pool.
  RequestPool(std::string name, int threads, size_t max_queued, MetricsRegistry& metrics);
  /// Stops taking tasks, destroys those still waiting without running them
  /// (an HttpResponder among their captures then answers "dropped"), and
  /// joins the threads once their running tasks return.
  ~RequestPool();
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  /// Queues `task` to run on one of the pool's threads. False when every
  /// thread has a task and max_queued more already wait, or the pool is
  /// stopping; `task` is then
  /// destroyed unrun (keep a copy of its HttpResponder to answer "busy").
  /// `task` must not throw.
  [[nodiscard]] bool TrySubmit(absl::AnyInvocable<void()> task);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int threads() const { return static_cast<int>(threads_.size()); }
  [[nodiscard]] size_t max_queued() const { return max_queued_; }
  /// Tasks waiting for a thread now.
  [[nodiscard]] size_t queued() const;

 private:
  struct Queued {
    absl::AnyInvocable<void()> task;
    absl::Time since;
  };

  void ThreadMain();

  const std::string name_;
  const size_t max_queued_;
  Gauge& queued_gauge_;
  Gauge& running_gauge_;
  Counter& rejected_;
  Histogram& wait_;

  mutable absl::Mutex mu_;
  absl::CondVar work_;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;  // tasks taken by a thread, not yet returned
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera
