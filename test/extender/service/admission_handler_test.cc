// The webhook's HTTP routing and metrics, without sockets (the TLS and the
// real API server are in http_server_tls_test.cc and the control-plane tests).
#include "extender/service/admission_handler.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tessera {
namespace {

namespace http = boost::beast::http;
using json = nlohmann::json;
using ::testing::HasSubstr;

HttpRequest Request(http::verb verb, std::string target, std::string body = "") {
  HttpRequest req{verb, target, 11};
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

std::string Review(const json& annotations) {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "u-1"},
                {"operation", "CREATE"},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                {"object",
                 {{"metadata", {{"name", "p"}, {"annotations", annotations}}},
                  {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}}}}}}
      .dump();
}

double Count(MetricsRegistry& metrics, const std::string& result) {
  return metrics.Counter("tessera_admission_requests_total", "", {{"result", result}}).Value();
}

TEST(AdmissionHandlerTest, AnswersEachKindOfReviewAndCountsItByResult) {
  MetricsRegistry metrics;
  const HttpHandler handle = MakeAdmissionHandler({}, metrics);
  struct Case {
    std::string body;
    int status;
    std::string result;
  };
  const Case cases[] = {
      {Review({{"tessera.io/gpu-fraction", "0.5"}}), 200, "patched"},
      {Review(json::object()), 200, "allowed"},
      {Review({{"tessera.io/gpu-fraction", "lots"}}), 200, "denied"},
      {"{not json", 400, "bad_request"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.result);
    const double before = Count(metrics, c.result);
    // The API server appends the webhook's timeout to the path.
    const HttpResponse res = handle(Request(http::verb::post, "/mutate-pods?timeout=5s", c.body));
    EXPECT_EQ(res.result_int(), c.status) << res.body();
    EXPECT_EQ(Count(metrics, c.result), before + 1);
  }
}

TEST(AdmissionHandlerTest, ABadRequestSaysWhyInJson) {
  MetricsRegistry metrics;
  const HttpResponse res = MakeAdmissionHandler({}, metrics)(Request(http::verb::post, "/mutate-pods", "[]"));
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_THAT(json::parse(res.body())["Error"].get<std::string>(), HasSubstr("not an AdmissionReview"));
}

TEST(AdmissionHandlerTest, OtherPathsAndMethodsAreRefused) {
  MetricsRegistry metrics;
  const HttpHandler handle = MakeAdmissionHandler({}, metrics);
  EXPECT_EQ(handle(Request(http::verb::post, "/filter", "{}")).result_int(), 404);
  EXPECT_EQ(handle(Request(http::verb::get, "/mutate-pods")).result_int(), 405);
  EXPECT_EQ(handle(Request(http::verb::get, "/healthz")).result_int(), 200);
}

}  // namespace
}  // namespace tessera
