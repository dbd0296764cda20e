// A small HTTPS client for the Kubernetes API server: one-shot requests over
// a pool of keep-alive connections, and line-by-line watch streams.
//
// Blocking by design: it is called from the watch threads and from bind
// requests, each of which waits for the answer anyway. Every operation has a
// deadline; nothing it does can block forever.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/api_server_config.h"
#include "scheduler/common/clock.h"

namespace tessera::k8s {

struct ApiResponse {
  int status = 0;    ///< HTTP status code.
  std::string body;  ///< For errors, a Kubernetes Status object.
};

struct ApiClientOptions {
  absl::Duration connect_timeout = absl::Seconds(5);  ///< TCP connect plus TLS handshake.
  absl::Duration request_timeout = absl::Seconds(30); ///< Whole request, connect included.
  size_t max_idle_connections = 8;
  /// A connection idle longer than this is closed, not reused: kube-apiserver
  /// closes keep-alive connections idle for 90 s (its IdleTimeout), and a
  /// request sent on one it just closed pays a lost round trip and a retry.
  absl::Duration max_idle_age = absl::Seconds(60);
  /// What idle ages are read from (tests drive a FakeClock); deadlines of
  /// requests are real time.
  const Clock* clock = &Clock::Real();
  uint64_t max_response_bytes = uint64_t{1} << 30;    ///< A list page of big objects can be large.
  /// A request whose reused keep-alive connection broke before any byte of
  /// an answer is sent once more on a new connection: the server may have
  /// closed the connection just as it was reused. But it may also have done
  /// the request and lost the answer, so the second try must be safe to
  /// repeat. It is for what the extender sends: GETs; merge PATCHes (the same
  /// patch twice is the patch once); a Binding (a repeat is 409, which the
  /// binder reads as bound when the pod is on its node); an Eviction (its uid
  /// precondition: a repeat evicts the same pod, 200 while it terminates,
  /// 404 once gone, both "evicted" to the preemption loop). Not for a
  /// Lease's PUT or POST: a repeat of a write that landed is a 409 that reads
  /// as "another replica wrote first", and a renewal that succeeded would
  /// count as lost; the lease's client turns this off (a failed renewal is
  /// tried again a retry period later).
  bool retry_on_reused_connection = true;
  std::string user_agent = "tessera-extender";
};

/// The `message` of a Kubernetes Status body (what the API server says went
/// wrong), or the start of the body when it is not one.
std::string StatusMessage(std::string_view body);

/// How a watch stream ended.
struct StreamEnd {
  int status = 0;          ///< HTTP status; 200 when the stream itself ran.
  std::string error_body;  ///< The body of a non-200 answer.
  bool stopped = false;    ///< `stop` was set.
};

class ApiClient {
 public:
  /// Prepares TLS (CA, client certificate, verification) from `config`.
  static absl::StatusOr<std::unique_ptr<ApiClient>> Create(ApiServerConfig config, ApiClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  /// One request. Any HTTP status is a response; only transport problems are
  /// errors: Unavailable (connect, TLS, connection lost) or DeadlineExceeded.
  /// A request that failed on a reused keep-alive connection before any byte
  /// of the answer arrived is retried once on a fresh connection.
  /// It ends by `deadline` or after ApiClientOptions::request_timeout,
  /// whichever is sooner (DeadlineExceeded): a bind's deadline is shorter
  /// than the client's, as kube-scheduler stops waiting for it sooner.
  absl::StatusOr<ApiResponse> Send(std::string_view method, std::string_view target, std::string_view body = {},
                                   std::string_view content_type = {},
                                   absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<ApiResponse> Get(std::string_view target) { return Send("GET", target); }

  /// Opens `target` (a watch) and calls `on_line` for every newline-ended
  /// line of the body as it arrives, until the server ends the stream, no
  /// byte arrives for `idle_timeout`, `stop` becomes true (checked at least
  /// every 100 ms), or `on_line` returns false. `on_batch_end` runs after the
  /// lines of each read are delivered: the moment to publish them together.
  /// `on_open`, when set, runs once the server has answered 200, before any
  /// line: the stream is open.
  absl::StatusOr<StreamEnd> Stream(std::string_view target, absl::Duration idle_timeout,
                                   const std::atomic<bool>& stop, absl::FunctionRef<bool(std::string_view)> on_line,
                                   absl::FunctionRef<void()> on_batch_end, const std::function<void()>& on_open = {});

  /// Opens connections (one at a time, each with the connect timeout, at
  /// most until `deadline`) until `connections` are idle, after closing those
  /// idle past max_idle_age: a burst of requests then finds them open rather
  /// than paying a TLS handshake each, all at once, on the API server.
  /// Stops early when `stop` (if given) becomes true.
  /// \return how many it opened; an error only when it could open none it needed.
  absl::StatusOr<size_t> KeepWarm(size_t connections, absl::Time deadline,
                                  const std::atomic<bool>* stop = nullptr);
  /// Keep-alive connections waiting for a request.
  [[nodiscard]] size_t idle_connections();

  [[nodiscard]] const ApiServerConfig& config() const { return config_; }

 private:
  struct Tls;
  struct Connection;

  ApiClient(ApiServerConfig config, ApiClientOptions options, std::unique_ptr<Tls> tls);
  absl::StatusOr<std::unique_ptr<Connection>> Connect(absl::Time deadline);
  std::unique_ptr<Connection> TakeIdle();
  void ReturnIdle(std::unique_ptr<Connection> c);
  absl::StatusOr<std::string> AuthorizationHeader();

  ApiServerConfig config_;
  ApiClientOptions options_;
  std::unique_ptr<Tls> tls_;
  BearerToken token_;
  absl::Mutex idle_mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(idle_mu_);
};

}  // namespace tessera::k8s
