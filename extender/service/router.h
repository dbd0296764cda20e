// Maps HTTP method and path to the extender verbs and the operational
// endpoints. A pure function of the request (no socket), so tests call it
// directly. Which thread runs it is RequestDispatcher's choice.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

#include "scheduler/metrics/metrics.h"
#include "extender/server/http_server.h"
#include "extender/service/extender_service.h"

namespace tessera {

struct RouterOptions {
  /// Path prefix kube-scheduler's `urlPrefix` carries ("/scheduler" for
  /// `http://host:8888/scheduler`). The bare verbs (`/filter`) are served too.
  std::string url_prefix;
  /// Why Tessera cannot trust its model now; empty when it can. `/readyz`
  /// answers 200 while it is empty, else 503 with it as the reason.
  std::function<std::string()> not_ready = [] { return std::string(); };
  /// `GET /debug`: a JSON document of Tessera's internal state (sync status,
  /// binds in flight, inconsistencies found), for people, not for machines.
  std::function<std::string()> debug_state = [] { return std::string("{}"); };
  /// `GET /ui`: the GPU map page (extender/service/gpu_map_page.h), given the
  /// request's target (its query string says what to show).
  std::function<std::string(std::string_view target)> gpu_map = [](std::string_view) { return std::string(); };
  /// Called before `/metrics` renders, to refresh gauges (model size, ...).
  std::function<void()> refresh_gauges = [] {};
};

/// Routes:
///   POST /filter, /prioritize            the extender verbs (also under url_prefix)
///   POST /bind                           binds the pod (API-server mode; 501 with a cluster file)
///   POST /preempt                        ExtenderPreemptionResult: victims that free a GPU
///   GET  /healthz, /readyz, /metrics     liveness, readiness, Prometheus text
///   GET  /debug, /ui                     internal state as JSON; the GPU map page (HTML)
/// Anything else: 404 (unknown path) or 405 (known path, wrong method), each
/// with a JSON body `{"Error": "<reason>"}`, as are 400s for malformed requests.
class Router {
 public:
  Router(RouterOptions options, const ExtenderService& service, MetricsRegistry& metrics);

  /// Answers `request` on the calling thread. A bind blocks on the API
  /// server until `deadline` at most (ExtenderService::Bind).
  [[nodiscard]] HttpResponse Handle(const HttpRequest& request, absl::Time deadline = absl::InfiniteFuture()) const;

  /// What is left of a request after Start...(): runs on a thread that may
  /// wait, and answers.
  using Rest = absl::AnyInvocable<HttpResponse()>;
  /// A bind in two steps (ExtenderService::StartBind): reserves the pod's
  /// GPUs now, on the calling thread (an I/O thread, at once), and returns
  /// the rest, which writes the Binding. A request that is not a proper bind
  /// (wrong method) is answered whole, now. Destroyed unrun, the rest
  /// releases the reservation.
  [[nodiscard]] Rest StartBind(const HttpRequest& request, absl::Time deadline) const;

  /// The verb `request` asks for ("filter", "bind", "healthz", ...), whatever
  /// its method; "" when no route matches.
  [[nodiscard]] std::string_view Verb(const HttpRequest& request) const;

  /// The answer to a request Tessera cannot take now (`reason` says why),
  /// counted like any other: for filter and bind an `{"Error": reason}` result
  /// (200), which kube-scheduler records on the pod before it retries it; for
  /// the rest 503 with Retry-After.
  [[nodiscard]] HttpResponse Refuse(const HttpRequest& request, std::string_view reason) const;

 private:
  HttpResponse Dispatch(const HttpRequest& request, std::string_view verb, absl::Time deadline) const;
  static HttpResponse BindAnswer(const HttpRequest& request, absl::StatusOr<std::string> body);
  void Count(std::string_view verb, const HttpResponse& response, double seconds) const;

  RouterOptions options_;
  const ExtenderService& service_;
  MetricsRegistry& metrics_;
};

}  // namespace tessera
