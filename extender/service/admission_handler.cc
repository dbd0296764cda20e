#include "extender/service/admission_handler.h"

#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "k8s/admission/admission_review.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;

// What an answer said, for the metric: read back from the answer itself, so
// the count cannot disagree with what the API server was told.
std::string ResultOf(const std::string& answer) {
  const nlohmann::json review = nlohmann::json::parse(answer, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json& response = review.is_object() ? review.value("response", nlohmann::json::object())
                                                      : nlohmann::json::object();
  if (!response.value("allowed", false)) return "denied";
  return response.contains("patch") ? "patched" : "allowed";
}

}  // namespace

HttpHandler MakeAdmissionHandler(k8s::PodMutationOptions options, MetricsRegistry& metrics) {
  constexpr const char* kName = "tessera_admission_requests_total";
  constexpr const char* kHelp = "AdmissionReviews answered by the pod mutation webhook, by result.";
  struct Counters {
    Counter* allowed;
    Counter* patched;
    Counter* denied;
    Counter* bad_request;
  };
  const Counters counters{&metrics.Counter(kName, kHelp, {{"result", "allowed"}}),
                          &metrics.Counter(kName, kHelp, {{"result", "patched"}}),
                          &metrics.Counter(kName, kHelp, {{"result", "denied"}}),
                          &metrics.Counter(kName, kHelp, {{"result", "bad_request"}})};
  return [options = std::move(options), counters](const HttpRequest& req) -> HttpResponse {
    // The API server appends ?timeout=<the webhook's timeoutSeconds>s.
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz") {
      HttpResponse ok{http::status::ok, 11};
      ok.body() = R"({"status":"ok"})";
      return ok;
    }
    if (path != kMutatePodsPath) return JsonErrorResponse(http::status::not_found, "no such path");
    if (req.method() != http::verb::post) {
      HttpResponse res = JsonErrorResponse(http::status::method_not_allowed, "use POST");
      res.set(http::field::allow, "POST");
      return res;
    }
    absl::StatusOr<std::string> answer = k8s::AnswerPodAdmission(req.body(), options);
    if (!answer.ok()) {
      counters.bad_request->Inc();
      return JsonErrorResponse(http::status::bad_request,
                               std::string("not an AdmissionReview: ") + std::string(answer.status().message()));
    }
    const std::string result = ResultOf(*answer);
    (result == "denied" ? counters.denied : result == "patched" ? counters.patched : counters.allowed)->Inc();
    HttpResponse res{http::status::ok, 11};
    res.body() = *std::move(answer);
    return res;
  };
}

}  // namespace tessera
