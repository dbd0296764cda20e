// Maps HTTP method and path to the extender verbs and the operational
// endpoints. A pure function of the request (no socket), so tests call it directly.
#pragma once

#include <functional>
#include <string>

#include "scheduler/metrics/metrics.h"
#include "extender/server/http_server.h"
#include "extender/service/extender_service.h"

namespace tessera {

struct RouterOptions {
  /// Path prefix kube-scheduler's `urlPrefix` carries ("/scheduler" for
  /// `http://host:8888/scheduler`). The bare verbs (`/filter`) are served too.
  std::string url_prefix;
  /// `/readyz` answers 200 only while this returns true.
  std::function<bool()> ready = [] { return true; };
  /// `GET /debug`: a JSON document of Tessera's internal state (sync status,
  /// binds in flight, inconsistencies found), for people, not for machines.
  std::function<std::string()> debug_state = [] { return std::string("{}"); };
  /// Called before `/metrics` renders, to refresh gauges (model size, ...).
  std::function<void()> refresh_gauges = [] {};
};

/// Routes:
///   POST /filter, /prioritize            the extender verbs (also under url_prefix)
///   POST /bind                           binds the pod (API-server mode; 501 with a cluster file)
///   POST /preempt                        501: Tessera does not answer preemption yet
///   GET  /healthz, /readyz, /metrics     liveness, readiness, Prometheus text
/// Anything else: 404 (unknown path) or 405 (known path, wrong method), each
/// with a JSON body `{"Error": "<reason>"}`, as are 400s for malformed requests.
class Router {
 public:
  Router(RouterOptions options, const ExtenderService& service, MetricsRegistry& metrics);

  [[nodiscard]] HttpResponse Handle(const HttpRequest& request) const;

 private:
  HttpResponse Dispatch(const HttpRequest& request, std::string_view verb) const;

  RouterOptions options_;
  const ExtenderService& service_;
  MetricsRegistry& metrics_;
};

}  // namespace tessera
