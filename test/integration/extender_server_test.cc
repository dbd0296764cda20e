// The whole extender behind a real HTTP server on 127.0.0.1 port 0: real
// requests over real sockets, concurrent clients, and every kind of bad input.
#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "extender/server/http_server.h"
#include "extender/service/router.h"
#include "test/testing/data_files.h"
#include "test/testing/http_client.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::HttpAnswer;
using testing::HttpClient;

constexpr const char* kCluster = R"(
nodes:
  - {name: a100-1, labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "81920"}}
  - {name: a100-2, labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "81920"}}
  - {name: t4-1, labels: {nvidia.com/gpu.count: "4", nvidia.com/gpu.product: NVIDIA-T4, nvidia.com/gpu.memory: "15360"}}
pods:
  - {namespace: ml, name: p0, annotations: {tessera.io/gpu-assignment: '{"node":"a100-1","gpus":[{"index":0,"milli":500}]}'}}
)";

std::string Request(const json& annotations, const json& names = {"a100-1", "a100-2", "t4-1", "ghost"}) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u-1"}, {"annotations", annotations}}},
              {"spec", json::object()}};
  return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
}

class ExtenderServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_ = std::make_unique<Router>(RouterOptions{.url_prefix = "/scheduler"}, fixture_.service(),
                                       fixture_.metrics());
    HttpServerOptions options;
    options.port = 0;
    options.threads = 4;
    options.body_limit = 1 << 20;  // small, to test 413 cheaply
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(options, [this](const HttpRequest& r) { return router_->Handle(r); });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_) {
      server_->Drain();
      server_->Wait();
    }
  }
  uint16_t port() const { return server_->port(); }

  testing::ServiceFixture fixture_{kCluster};
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ExtenderServerTest, FilterAnswersOverTheWireWithPreciseReasons) {
  HttpClient client(port());
  const HttpAnswer a = client.Post("/scheduler/filter", Request({{"tessera.io/gpu-fraction", "0.5"},
                                                                 {"tessera.io/gpu-model", "NVIDIA-A100*"}}));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  const json answer = json::parse(a.body);
  // a100-2 fits too; the shortlist passes on the best-ranked (binpack: the card half taken).
  EXPECT_EQ(answer["NodeNames"], json({"a100-1"}));
  EXPECT_THAT(answer["FailedAndUnresolvableNodes"]["t4-1"].get<std::string>(), HasSubstr("4x NVIDIA-T4"));
  EXPECT_THAT(answer["FailedNodes"]["ghost"].get<std::string>(), HasSubstr("not in Tessera's cluster model"));
  EXPECT_EQ(answer["Error"], "");
}

TEST_F(ExtenderServerTest, PrioritizeAnswersABareArrayInRequestOrder) {
  HttpClient client(port());
  const HttpAnswer a = client.Post("/prioritize", Request({{"tessera.io/gpu-fraction", "0.25"}}, {"a100-2", "a100-1"}));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(json::parse(a.body), json::parse(R"([{"Host":"a100-2","Score":1},{"Host":"a100-1","Score":10}])"));
}

struct BadInputCase {
  std::string name;
  boost::beast::http::verb method;
  std::string target;
  std::string body;
  int status;
  std::string reason_part;
};

TEST_F(ExtenderServerTest, BadInputGetsAJsonReasonAndTheServerKeepsServing) {
  using boost::beast::http::verb;
  const std::string valid = Request({{"tessera.io/gpu-fraction", "0.5"}});
  const std::vector<BadInputCase> cases = {
      {"malformed JSON is a 400", verb::post, "/filter", "{\"Pod\": {", 400, "malformed JSON"},
      {"a body that is not an object is a 400", verb::post, "/filter", "[1,2]", 400,
       "ExtenderArgs must be a JSON object, got array"},
      {"a Pod of the wrong type is a 400", verb::post, "/prioritize", R"({"Pod":"x","NodeNames":[]})", 400,
       "ExtenderArgs.Pod must be an object, got string"},
      {"a missing Pod is a 400", verb::post, "/filter", R"({"NodeNames":["a"]})", 400, "ExtenderArgs.Pod is missing"},
      {"node names of the wrong type are a 400", verb::post, "/filter",
       R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":[1]})", 400, "NodeNames[0] must be a string, got number"},
      {"an empty body is a 400", verb::post, "/filter", "", 400, "request body is empty"},
      {"an oversize body is a 413", verb::post, "/filter", std::string(2 << 20, ' '), 413, "limit"},
      {"an unknown path is a 404", verb::post, "/filterz", valid, 404, "no such path: /filterz"},
      {"a wrong method is a 405", verb::get, "/filter", "", 405, "GET is not allowed on /filter; use POST"},
      {"bind is not served without the API server", verb::post, "/bind",
       R"({"PodName":"p","PodNamespace":"ml","PodUID":"u","Node":"a100-1"})", 501, "bind needs the API server"},
      {"a malformed bind is still a 400", verb::post, "/bind", R"({"PodName":"p"})", 400,
       "ExtenderBindingArgs.PodNamespace is missing"},
      {"a preempt without a Pod is a 400", verb::post, "/preempt", R"({"NodeNameToMetaVictims":{}})", 400,
       "ExtenderPreemptionArgs.Pod is missing"},
      {"a preempt whose victims are not a map is a 400", verb::post, "/preempt",
       R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":[1]})", 400, "NodeNameToMetaVictims"},
  };
  for (const BadInputCase& c : cases) {
    SCOPED_TRACE(c.name);
    HttpClient client(port());
    const HttpAnswer bad = client.Send(c.method, c.target, c.body);
    EXPECT_EQ(bad.status, c.status) << bad.body;
    EXPECT_EQ(bad.content_type, "application/json");
    const json reason = json::parse(bad.body, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(reason.is_object()) << bad.body;
    EXPECT_THAT(reason.value("Error", ""), HasSubstr(c.reason_part));
    if (c.status == 405) {
      EXPECT_EQ(bad.allow, "POST");
    }
    // The server keeps serving: a fresh connection gets a proper answer.
    HttpClient next(port());
    EXPECT_EQ(next.Post("/filter", valid).status, 200);
  }
}

TEST_F(ExtenderServerTest, AFullNodeBodyAtTheLimitIsServedAndOneByteMoreGets413) {
  // The recorded request's Node objects, repeated under new names to just
  // under the 1 MiB limit, then padded with spaces (JSON allows them) to it.
  const json recorded = json::parse(testing::ReadFile(testing::FixturePath("filter-request-fullnodes.json")));
  const json& nodes = recorded["Nodes"]["items"];
  const size_t limit = size_t{1} << 20;
  std::string body = R"({"Pod":)" + recorded["Pod"].dump() + R"(,"Nodes":{"metadata":{},"items":[)";
  json first;
  for (size_t i = 0; body.size() < limit - 8192; ++i) {
    json node = nodes[i % nodes.size()];
    node["metadata"]["name"] = "node-" + std::to_string(i);
    if (i == 0) first = node;
    body += (i > 0 ? "," : "") + node.dump();
  }
  body += R"(]},"NodeNames":null})";
  const json request = json::parse(body);
  body.resize(limit, ' ');

  HttpClient client(port());
  const HttpAnswer served = client.Post("/filter", body);
  ASSERT_EQ(served.status, 200) << served.body.substr(0, 300);
  const json answer = json::parse(served.body);
  EXPECT_EQ(answer["Nodes"]["items"].size(), request["Nodes"]["items"].size()) << "every node passes, echoed";
  EXPECT_EQ(answer["Nodes"]["items"][0], first);

  body.push_back(' ');
  const HttpAnswer refused = HttpClient(port()).Post("/filter", body);
  EXPECT_EQ(refused.status, 413);
  EXPECT_THAT(refused.body, HasSubstr("limit"));
}

TEST_F(ExtenderServerTest, ThirtyTwoConcurrentClientsGetTheSameAnswersAsOne) {
  const std::string filter = Request({{"tessera.io/gpu-fraction", "0.5"}});
  const std::string prioritize = Request({{"tessera.io/gpu-fraction", "0.25"}});
  HttpClient reference(port());
  const std::string want_filter = reference.Post("/filter", filter).body;
  const std::string want_prioritize = reference.Post("/prioritize", prioritize).body;
  ASSERT_FALSE(want_filter.empty());

  std::atomic<int> good{0}, bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 32; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client(port());  // keep-alive: 20 requests on one connection
      for (int i = 0; i < 20; ++i) {
        const bool f = (c + i) % 2 == 0;
        const HttpAnswer a = client.Post(f ? "/scheduler/filter" : "/scheduler/prioritize", f ? filter : prioritize);
        (a.status == 200 && a.body == (f ? want_filter : want_prioritize) ? good : bad)++;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), 32 * 20);
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(ExtenderServerTest, OperationalEndpointsAnswer) {
  HttpClient client(port());
  EXPECT_EQ(client.Get("/healthz").status, 200);
  EXPECT_EQ(client.Get("/readyz").status, 200);
  client.Post("/filter", Request({{"tessera.io/gpu-fraction", "0.5"}}));
  client.Post("/filter", "{");
  const HttpAnswer metrics = client.Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.content_type, HasSubstr("text/plain"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_http_requests_total{code="200",verb="filter"} 1)"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_http_requests_total{code="400",verb="filter"} 1)"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_filter_rejections_total{reason="unknown_node"} 1)"));
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_http_request_duration_seconds_count{verb="filter"} 2)"));
}

}  // namespace
}  // namespace tessera
