// Publishing against the fake API server (real HTTPS, real Kubernetes JSON):
// one PATCH when something changed, none when nothing did, and the node's
// other annotations left alone.
#include "agent/publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/testing/fake_api_server.h"

namespace tessera::agent {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using tessera::testing::FakeApiServer;

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    json node = FakeApiServer::MinimalNode("gpu-1");
    node["metadata"]["annotations"] = {{"example.com/owner", "team-a"}};
    ASSERT_TRUE(server_.AddNode(node).ok());
    k8s::ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = std::to_string(server_.port());
    config.ca_pem = server_.certs().ca.cert_pem;
    absl::StatusOr<std::unique_ptr<k8s::ApiClient>> api = k8s::ApiClient::Create(config);
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
  }

  json Annotations() { return server_.Node("gpu-1").value()["metadata"]["annotations"]; }
  size_t Patches() { return server_.Requests("PATCH").size(); }

  FakeApiServer server_;
  std::unique_ptr<k8s::ApiClient> api_;
};

TEST_F(PublisherTest, PatchesOnceAndNotAgainWhileNothingChanges) {
  NodePublisher publisher(*api_, "gpu-1");
  const DesiredAnnotations desired = {{"tessera.io/gpu-inventory", "[1]"}, {"tessera.io/gpu-topology", "[[\"X\"]]"}};
  EXPECT_EQ(publisher.Publish(desired), absl::StatusOr<bool>(true));
  EXPECT_EQ(publisher.Publish(desired), absl::StatusOr<bool>(false));
  EXPECT_EQ(publisher.Publish(desired), absl::StatusOr<bool>(false));
  EXPECT_EQ(Patches(), 1u);
  EXPECT_EQ(server_.Requests("GET", "/api/v1/nodes/gpu-1").size(), 3u);
  const json a = Annotations();
  EXPECT_EQ(a["tessera.io/gpu-inventory"], "[1]");
  EXPECT_EQ(a["tessera.io/gpu-topology"], "[[\"X\"]]");
  EXPECT_EQ(a["example.com/owner"], "team-a");
  const std::vector<tessera::testing::RecordedRequest> patches = server_.Requests("PATCH");
  EXPECT_EQ(patches[0].headers.at("content-type"), "application/merge-patch+json");
}

TEST_F(PublisherTest, PatchesOnlyWhatChangedAndRemovesWhatIsGone) {
  NodePublisher publisher(*api_, "gpu-1");
  ASSERT_TRUE(publisher.Publish({{"tessera.io/gpu-inventory", "[1]"}, {"tessera.io/gpu-topology", "[[\"X\"]]"}}).ok());
  server_.ClearRequests();
  EXPECT_EQ(publisher.Publish({{"tessera.io/gpu-inventory", "[2]"}, {"tessera.io/gpu-topology", "[[\"X\"]]"}}),
            absl::StatusOr<bool>(true));
  EXPECT_EQ(server_.Requests("PATCH").at(0).body, R"({"metadata":{"annotations":{"tessera.io/gpu-inventory":"[2]"}}})");
  EXPECT_EQ(publisher.Publish({{"tessera.io/gpu-inventory", "[2]"}, {"tessera.io/gpu-topology", std::nullopt}}),
            absl::StatusOr<bool>(true));
  EXPECT_FALSE(Annotations().contains("tessera.io/gpu-topology"));
  EXPECT_EQ(publisher.Publish({{"tessera.io/gpu-inventory", "[2]"}, {"tessera.io/gpu-topology", std::nullopt}}),
            absl::StatusOr<bool>(false));
  EXPECT_EQ(Patches(), 2u);
}

TEST_F(PublisherTest, AnAnnotationSomeoneElseChangedIsPutBack) {
  NodePublisher publisher(*api_, "gpu-1");
  const DesiredAnnotations desired = {{"tessera.io/gpu-inventory", "[1]"}};
  ASSERT_TRUE(publisher.Publish(desired).ok());
  json node = server_.Node("gpu-1").value();
  node["metadata"]["annotations"]["tessera.io/gpu-inventory"] = "hand-edited";
  ASSERT_TRUE(server_.UpdateNode(node).ok());
  EXPECT_EQ(publisher.Publish(desired), absl::StatusOr<bool>(true));
  EXPECT_EQ(Annotations()["tessera.io/gpu-inventory"], "[1]");
}

TEST_F(PublisherTest, AMissingNodeIsNotFoundNamingIt) {
  NodePublisher publisher(*api_, "no-such-node");
  const absl::StatusOr<bool> r = publisher.Publish({{"tessera.io/gpu-inventory", "[]"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("GET /api/v1/nodes/no-such-node: HTTP 404"));
  EXPECT_EQ(Patches(), 0u);
}

TEST_F(PublisherTest, AFailedPatchIsAnErrorAndTheNextPublishTriesAgain) {
  NodePublisher publisher(*api_, "gpu-1");
  server_.FailNext({"PATCH", "/api/v1/nodes/"}, 503);
  const absl::StatusOr<bool> failed = publisher.Publish({{"tessera.io/gpu-inventory", "[1]"}});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(publisher.Publish({{"tessera.io/gpu-inventory", "[1]"}}), absl::StatusOr<bool>(true));
  EXPECT_EQ(Annotations()["tessera.io/gpu-inventory"], "[1]");
}

}  // namespace
}  // namespace tessera::agent
