// RequestDispatcher over a real HTTP server: which requests leave the I/O
// thread, and that they are answered the same wherever they run.
#include "extender/service/request_dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "test/testing/http_client.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr const char* kCluster = R"(nodes:
  - {name: n1, labels: {nvidia.com/gpu.count: "2", nvidia.com/gpu.product: NVIDIA-L4, nvidia.com/gpu.memory: "23034"}}
)";
constexpr const char* kFilter =
    R"({"Pod":{"metadata":{"name":"p","annotations":{"tessera.io/gpu-fraction":"0.5"}}},"Nodes":null,"NodeNames":["n1"]})";
constexpr const char* kBind = R"({"PodName":"p","PodNamespace":"ml","PodUID":"u","Node":"n1"})";

// Requests that went through `pool` (its wait histogram's count).
std::string Ran(const std::string& metrics, const std::string& pool) {
  const std::string key = absl::StrCat("tessera_request_pool_wait_seconds_count{pool=\"", pool, "\"} ");
  const size_t at = metrics.find(key);
  return at == std::string::npos ? "?" : metrics.substr(at + key.size(), metrics.find('\n', at) - at - key.size());
}

class RequestDispatcherTest : public ::testing::Test {
 protected:
  RequestDispatcherTest() : fixture_(kCluster) {
    router_ = std::make_unique<Router>(RouterOptions{}, fixture_.service(), fixture_.metrics());
    DispatcherOptions options;
    options.large_body_bytes = 4096;
    dispatcher_ = std::make_unique<RequestDispatcher>(options, *router_, fixture_.metrics());
    HttpServerOptions server_options;
    server_options.port = 0;
    server_ = *HttpServer::StartAsync(server_options, [this](HttpRequest r, HttpResponder respond) {
      dispatcher_->Handle(std::move(r), std::move(respond));
    });
  }
  std::string Metrics() { return fixture_.metrics().Render(); }

  testing::ServiceFixture fixture_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<RequestDispatcher> dispatcher_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(RequestDispatcherTest, ASmallFilterIsAnsweredOnTheIoThreadAndALargeOneOnTheVerbPoolAlike) {
  testing::HttpClient http(server_->port());
  const testing::HttpAnswer small = http.Post("/filter", kFilter);
  ASSERT_EQ(small.status, 200) << small.body;
  EXPECT_EQ(Ran(Metrics(), "verbs"), "0");

  // The same request padded past large_body_bytes with JSON whitespace.
  const testing::HttpAnswer large = http.Post("/filter", kFilter + std::string(8192, ' '));
  ASSERT_EQ(large.status, 200) << large.body;
  EXPECT_EQ(large.body, small.body);
  EXPECT_EQ(Ran(Metrics(), "verbs"), "1");
  EXPECT_EQ(http.Get("/healthz").status, 200);
  EXPECT_EQ(Ran(Metrics(), "verbs"), "1") << "probes never leave the I/O thread";
}

TEST_F(RequestDispatcherTest, ABindRunsOnTheBindPoolEvenWhereItCannotBind) {
  testing::HttpClient http(server_->port());
  // A cluster file: no API server to bind through. Answered from the bind pool all the same.
  const testing::HttpAnswer bind = http.Post("/bind", kBind);
  EXPECT_EQ(bind.status, 501);
  EXPECT_THAT(bind.body, HasSubstr("bind needs the API server"));
  EXPECT_EQ(Ran(Metrics(), "bind"), "1");
  // A GET on /bind is answered whole, with 405, all the same.
  EXPECT_EQ(http.Get("/bind").status, 405);
  EXPECT_THAT(Metrics(), HasSubstr(R"(tessera_http_requests_total{code="501",verb="bind"} 1)"));
}

}  // namespace
}  // namespace tessera
