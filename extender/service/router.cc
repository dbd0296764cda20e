#include "extender/service/router.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "k8s/extender_results.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;

struct Route {
  std::string_view verb;  // also the metrics label
  http::verb method;
};

constexpr Route kRoutes[] = {
    {"filter", http::verb::post},  {"prioritize", http::verb::post}, {"bind", http::verb::post},
    {"preempt", http::verb::post}, {"healthz", http::verb::get},     {"readyz", http::verb::get},
    {"metrics", http::verb::get},  {"debug", http::verb::get},      {"ui", http::verb::get},
};

HttpResponse Respond(const HttpRequest& req, http::status status, std::string body,
                     std::string_view content_type = "application/json") {
  HttpResponse res(status, req.version());
  res.set(http::field::content_type, content_type);
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

HttpResponse JsonError(const HttpRequest& req, http::status status, std::string_view message) {
  HttpResponse res = JsonErrorResponse(status, message);
  res.version(req.version());
  res.keep_alive(req.keep_alive());
  return res;
}

// The route for `target`: "/filter" or "<prefix>/filter"; query strings ignored.
const Route* FindRoute(std::string_view target, std::string_view prefix) {
  target = target.substr(0, target.find('?'));
  if (!prefix.empty() && target.substr(0, prefix.size()) == prefix &&
      target.size() > prefix.size() && target[prefix.size()] == '/') {
    const std::string_view rest = target.substr(prefix.size());
    for (const Route& r : kRoutes) {
      if (rest.size() == r.verb.size() + 1 && rest.substr(1) == r.verb && r.method == http::verb::post) return &r;
    }
  }
  for (const Route& r : kRoutes) {
    if (target.size() == r.verb.size() + 1 && target[0] == '/' && target.substr(1) == r.verb) return &r;
  }
  return nullptr;
}

}  // namespace

Router::Router(RouterOptions options, const ExtenderService& service, MetricsRegistry& metrics)
    : options_(std::move(options)), service_(service), metrics_(metrics) {
  while (!options_.url_prefix.empty() && options_.url_prefix.back() == '/') options_.url_prefix.pop_back();
  if (!options_.url_prefix.empty() && options_.url_prefix.front() != '/') options_.url_prefix = absl::StrCat("/", options_.url_prefix);
}

std::string_view Router::Verb(const HttpRequest& request) const {
  const Route* route = FindRoute(request.target(), options_.url_prefix);
  return route != nullptr ? route->verb : std::string_view();
}

HttpResponse Router::Refuse(const HttpRequest& request, std::string_view reason) const {
  const std::string_view verb = Verb(request);
  HttpResponse response;
  if (verb == "filter" || verb == "bind") {
    std::string body = "{\"Error\":";
    k8s::AppendWireReason(body, reason);
    body += '}';
    response = Respond(request, http::status::ok, std::move(body));
  } else {
    response = JsonError(request, http::status::service_unavailable, reason);
    response.set(http::field::retry_after, "1");
  }
  Count(verb.empty() ? "unknown" : verb, response, 0.0);
  return response;
}

void Router::Count(std::string_view verb, const HttpResponse& response, double seconds) const {
  metrics_.Counter("tessera_http_requests_total", "HTTP requests by verb and status code.",
                   {{"verb", std::string(verb)}, {"code", std::to_string(response.result_int())}})
      .Inc();
  metrics_.Histogram("tessera_http_request_duration_seconds", "Time to answer a request, by verb.",
                     {{"verb", std::string(verb)}}, DefaultLatencyBuckets())
      .Observe(seconds);
}

HttpResponse Router::BindAnswer(const HttpRequest& request, absl::StatusOr<std::string> body) {
  if (body.ok()) return Respond(request, http::status::ok, std::move(*body));
  const http::status code =
      absl::IsUnimplemented(body.status()) ? http::status::not_implemented : http::status::bad_request;
  return JsonError(request, code, Std(body.status().message()));
}

Router::Rest Router::StartBind(const HttpRequest& request, absl::Time deadline) const {
  const auto start = std::chrono::steady_clock::now();
  if (request.method() != http::verb::post || Verb(request) != "bind") {
    return [whole = Handle(request, deadline)]() mutable { return std::move(whole); };
  }
  // What the answer needs of the request, without its body.
  HttpRequest head{request.method(), request.target(), request.version()};
  head.keep_alive(request.keep_alive());
  return [this, start, head = std::move(head), rest = service_.StartBind(request.body(), deadline)]() mutable {
    HttpResponse response = BindAnswer(head, rest());
    Count("bind", response, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return response;
  };
}

HttpResponse Router::Handle(const HttpRequest& request, absl::Time deadline) const {
  const auto start = std::chrono::steady_clock::now();
  const Route* route = FindRoute(request.target(), options_.url_prefix);
  std::string_view verb = route != nullptr ? route->verb : "unknown";
  HttpResponse response = [&] {
    if (route == nullptr) {
      return JsonError(request, http::status::not_found,
                       absl::StrCat("no such path: ", Absl(request.target()),
                                    "; Tessera serves POST /filter, /prioritize, /bind, /preempt and GET /healthz, "
                                    "/readyz, /metrics, /debug, /ui"));
    }
    if (request.method() != route->method) {
      HttpResponse res = JsonError(request, http::status::method_not_allowed,
                                   absl::StrCat(Absl(request.method_string()), " is not allowed on /", Absl(route->verb),
                                                "; use ", Absl(http::to_string(route->method))));
      res.set(http::field::allow, http::to_string(route->method));
      return res;
    }
    return Dispatch(request, route->verb, deadline);
  }();
  Count(verb, response, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return response;
}

HttpResponse Router::Dispatch(const HttpRequest& request, std::string_view verb, absl::Time deadline) const {
  if (verb == "filter" || verb == "prioritize") {
    absl::StatusOr<std::string> body =
        verb == "filter" ? service_.Filter(request.body()) : service_.Prioritize(request.body());
    if (!body.ok()) {
      // Too many nodes to answer: 413, as for a body over the limit.
      const http::status code = absl::IsResourceExhausted(body.status()) ? http::status::payload_too_large
                                                                          : http::status::bad_request;
      return JsonError(request, code, Std(body.status().message()));
    }
    return Respond(request, http::status::ok, std::move(*body));
  }
  if (verb == "bind") return BindAnswer(request, service_.Bind(request.body(), deadline));
  if (verb == "preempt") {
    absl::StatusOr<std::string> body = service_.Preempt(request.body());
    if (!body.ok()) return JsonError(request, http::status::bad_request, Std(body.status().message()));
    return Respond(request, http::status::ok, std::move(*body));
  }
  if (verb == "healthz") return Respond(request, http::status::ok, "{\"status\":\"ok\"}");
  if (verb == "readyz") {
    const std::string why = options_.not_ready();
    return why.empty() ? Respond(request, http::status::ok, "{\"status\":\"ready\"}")
                       : JsonError(request, http::status::service_unavailable, absl::StrCat("not ready: ", why));
  }
  if (verb == "debug") return Respond(request, http::status::ok, options_.debug_state());
  if (verb == "ui") {
    HttpResponse res = Respond(request, http::status::ok, options_.gpu_map(request.target()),
                               "text/html; charset=utf-8");
    // Inline style and script only, nothing from elsewhere.
    res.set("Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; form-action 'self'");
    res.set(http::field::cache_control, "no-store");
    return res;
  }
  options_.refresh_gauges();
  return Respond(request, http::status::ok, metrics_.Render(), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace tessera
