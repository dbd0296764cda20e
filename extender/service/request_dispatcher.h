// Which thread answers which request, so that no request's work holds an HTTP
// I/O thread (issues #18 and #19):
//
//   I/O thread ─┬─ /healthz /readyz /metrics /debug, small filter/prioritize ──> Router, at once
//               ├─ bind ──────────────────────────> bind pool (--bind-threads): waits on the API server
//               └─ large filter/prioritize/preempt ──> verb pool (--threads): long CPU work
//
// The I/O threads only read, route and write, so liveness and readiness
// probes answer in microseconds while binds wait for the API server and large
// filters compute. A bind's first step, which reserves its GPUs and waits on
// nothing, stays on the I/O thread (Router::StartBind): the GPUs count before
// kube-scheduler's next filter, sent right after the bind, is answered. Many binds are in flight at once, as kube-scheduler's own
// binds are (one goroutine per pod); each has a deadline counted from its
// arrival, below kube-scheduler's extender httpTimeout, so it answers while
// kube-scheduler still listens. A pool whose queue is full answers "busy" at
// once (Router::Refuse) rather than queue without bound.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "absl/time/time.h"
#include "extender/server/http_server.h"
#include "extender/service/request_pool.h"
#include "extender/service/router.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

struct DispatcherOptions {
  /// Threads that run binds; each waits on the API server. At least 1.
  int bind_threads = 64;
  /// Binds that may wait for a bind thread; one more is refused.
  size_t bind_queue = 256;
  /// Time a bind may take from its arrival, the wait for a thread included.
  /// Below kube-scheduler's extender httpTimeout (5 s unless set; the chart
  /// sets 10 s), so the answer comes while kube-scheduler still waits for it.
  absl::Duration bind_timeout = absl::Seconds(4);
  /// Threads for filter, prioritize and preempt requests whose body is at
  /// least large_body_bytes. At least 1.
  int verb_threads = 2;
  /// Such requests that may wait for a verb thread; one more is refused.
  size_t verb_queue = 64;
  /// From this body size on, decoding and answering takes long enough
  /// (about a millisecond and more) to leave the I/O thread; smaller
  /// requests are answered on it, which saves two thread switches.
  size_t large_body_bytes = size_t{256} << 10;
};

class RequestDispatcher {
 public:
  /// `router` and `metrics` must outlive the dispatcher. Starts the pools.
  RequestDispatcher(DispatcherOptions options, const Router& router, MetricsRegistry& metrics);
  /// Refuses what still waits for a thread ("dropped") and joins the threads
  /// once the requests they run are answered (binds: by their deadline).
  ~RequestDispatcher();
  RequestDispatcher(const RequestDispatcher&) = delete;
  RequestDispatcher& operator=(const RequestDispatcher&) = delete;

  /// The HTTP server's AsyncHttpHandler. Returns at once on the I/O thread.
  void Handle(HttpRequest request, HttpResponder respond);

  [[nodiscard]] const DispatcherOptions& options() const { return options_; }

 private:
  // Runs `work` on `pool` and answers with what it returns, or answers
  // "busy" at once when the pool's queue is full (`work` is then destroyed
  // unrun). `sized_by` names the flag that sizes the pool, for that answer.
  void Submit(RequestPool& pool, std::string_view sized_by, const HttpRequest& request, Router::Rest work,
              HttpResponder respond);

  const DispatcherOptions options_;
  const Router& router_;
  // Declared last: destroyed (joined) first, while what their tasks use lives.
  std::unique_ptr<RequestPool> verb_pool_;
  std::unique_ptr<RequestPool> bind_pool_;
};

}  // namespace tessera
