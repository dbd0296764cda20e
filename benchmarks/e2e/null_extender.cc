#include "benchmarks/e2e/null_extender.h"

#include <algorithm>
#include <string>
#include <utility>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tessera::bench {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

HttpResponse JsonAnswer(unsigned version, const json& body) {
  HttpResponse response{http::status::ok, version};
  response.set(http::field::content_type, "application/json");
  response.body() = body.dump();
  response.prepare_payload();
  return response;
}

// ExtenderBindingArgs in, one POST of the pod's Binding subresource, the
// ExtenderBindingResult's Error (empty when bound) out.
std::string Bind(k8s::ApiClient& client, const std::string& body) {
  const json args = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object() || !args.contains("PodName") || !args.contains("PodNamespace") || !args.contains("Node")) {
    return "null extender: the bind request lacks PodName, PodNamespace or Node";
  }
  const std::string name = args.value("PodName", ""), ns = args.value("PodNamespace", "");
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", ns}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", args.value("Node", "")}}}};
  if (args.contains("PodUID")) binding["metadata"]["uid"] = args.value("PodUID", "");
  // Below kube-scheduler's extender httpTimeout (30 s by default), as Tessera's.
  absl::StatusOr<k8s::ApiResponse> answer =
      client.Send("POST", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name, "/binding"), binding.dump(),
                  "application/json", absl::Now() + absl::Seconds(20));
  if (!answer.ok()) return std::string(answer.status().message());
  if (answer->status != 201 && answer->status != 200) {
    return absl::StrCat("binding answered ", answer->status, ": ", k8s::StatusMessage(answer->body));
  }
  return "";
}

// kube-scheduler's answer to a filter call: the first of the request's
// NodeNames (nodeCacheCapable), or an Error naming what is missing.
HttpResponse NullFilterResponse(const HttpRequest& request) {
  const json args = json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
  json result = {{"NodeNames", json::array()}, {"FailedNodes", json::object()}, {"Error", ""}};
  const auto names = args.is_object() ? args.find("NodeNames") : args.end();
  if (names != args.end() && names->is_array() && !names->empty()) {
    result["NodeNames"].push_back((*names)[0]);
  } else {
    result["Error"] = "null extender: the request names no node (nodeCacheCapable must be true)";
  }
  return JsonAnswer(request.version(), result);
}

}  // namespace

absl::StatusOr<std::unique_ptr<NullExtender>> NullExtender::Start(uint16_t port,
                                                                  std::unique_ptr<k8s::ApiClient> binder,
                                                                  int bind_threads) {
  std::unique_ptr<NullExtender> extender(new NullExtender);
  extender->binder_ = std::move(binder);
  if (extender->binder_) {
    extender->bind_pool_ = std::make_unique<boost::asio::thread_pool>(bind_threads);
    // As many as Tessera keeps warm for its bind threads.
    extender->warmer_ = std::make_unique<k8s::ConnectionWarmer>(
        *extender->binder_, std::min(static_cast<size_t>(bind_threads), k8s::ConnectionWarmer::kMaxConnections));
  }
  HttpServerOptions options;
  options.port = port;
  k8s::ApiClient* client = extender->binder_.get();
  boost::asio::thread_pool* pool = extender->bind_pool_.get();
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::StartAsync(
      options, [client, pool](HttpRequest request, HttpResponder respond) {
        const absl::string_view target(request.target().data(), request.target().size());
        if (absl::EndsWith(target, "/bind") && client != nullptr) {
          boost::asio::post(*pool, [client, request = std::move(request), respond = std::move(respond)] {
            respond(JsonAnswer(request.version(), json{{"Error", Bind(*client, request.body())}}));
          });
          return;
        }
        if (absl::EndsWith(target, "/filter")) return respond(NullFilterResponse(request));
        respond(JsonErrorResponse(http::status::not_found, "null extender: filter and bind only"));
      });
  if (!server.ok()) return server.status();
  extender->server_ = *std::move(server);
  return extender;
}

NullExtender::~NullExtender() {
  // The server first: no bind is handed to the pool after it stops.
  if (server_) server_->Drain();
  server_.reset();
  if (bind_pool_) bind_pool_->join();
}

}  // namespace tessera::bench
