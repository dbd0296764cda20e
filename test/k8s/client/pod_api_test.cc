// KubePodApi's preemption writes, Evict and Nominate, over real HTTPS against
// the fake API server: the exact request each makes, and how the server's
// answers become errors. (What the real kube-apiserver answers, which the fake
// copies, is test/control_plane/eviction_test.cc.)
#include "k8s/client/pod_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <ostream>

#include "absl/time/clock.h"
#include "test/testing/fake_api_server.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using testing::FakeApiServer;
using json = nlohmann::json;

class KubePodApiTest : public ::testing::Test {
 public:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    absl::StatusOr<std::string> path = server_.WriteKubeconfig();
    ASSERT_TRUE(path.ok()) << path.status();
    absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(*path);
    ASSERT_TRUE(config.ok()) << config.status();
    absl::StatusOr<std::unique_ptr<ApiClient>> client = ApiClient::Create(*config);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    api_ = std::make_unique<KubePodApi>(*client_);
  }

  // A pod in "ml", bound to n1 and gone at once when deleted (grace 0), or
  // pending when `node` is empty.
  PodRef AddPod(const std::string& name, const std::string& node = "n1") {
    json pod = FakeApiServer::MinimalPod("ml", name);
    pod["spec"]["terminationGracePeriodSeconds"] = 0;
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    absl::StatusOr<json> added = server_.AddPod(pod);
    EXPECT_TRUE(added.ok()) << added.status();
    return {"ml", name, added.ok() ? (*added)["metadata"]["uid"].get<std::string>() : ""};
  }

  static absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

 protected:
  FakeApiServer server_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<KubePodApi> api_;
};

TEST_F(KubePodApiTest, EvictPostsAPolicyV1EvictionWithTheUidAsPrecondition) {
  const PodRef pod = AddPod("victim");
  ASSERT_TRUE(api_->Evict(pod, Soon()).ok());
  const std::vector<testing::RecordedRequest> posts = server_.Requests("POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].target, "/api/v1/namespaces/ml/pods/victim/eviction");
  EXPECT_EQ(posts[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(json::parse(posts[0].body), json::parse(R"({"apiVersion":"policy/v1","kind":"Eviction",
      "metadata":{"name":"victim","namespace":"ml"},
      "deleteOptions":{"preconditions":{"uid":")" + pod.uid + R"("}}})"));
  EXPECT_FALSE(server_.Pod("ml", "victim").has_value()) << "a pod without grace period goes at once";
}

struct EvictCase {
  std::string name;
  std::function<PodRef(KubePodApiTest&, FakeApiServer&)> stage;
  absl::StatusCode want;
  std::string want_message;  // a part of the error's message
  bool pod_stays;
};

void PrintTo(const EvictCase& c, std::ostream* os) { *os << c.name; }

class KubePodApiEvict : public KubePodApiTest, public ::testing::WithParamInterface<EvictCase> {};

TEST_P(KubePodApiEvict, MapsTheApiServersAnswer) {
  const EvictCase& c = GetParam();
  const PodRef pod = c.stage(*this, server_);
  const absl::Status status = api_->Evict(pod, Soon());
  EXPECT_EQ(status.code(), c.want) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(c.want_message));
  EXPECT_EQ(server_.Pod("ml", pod.name).has_value(), c.pod_stays);
}

INSTANTIATE_TEST_SUITE_P(
    Answers, KubePodApiEvict,
    ::testing::Values(
        EvictCase{"AcceptedIsOk", [](KubePodApiTest& t, FakeApiServer&) { return t.AddPod("p"); },
                  absl::StatusCode::kOk, "", false},
        EvictCase{"AlreadyGoneIsNotFound", [](KubePodApiTest&, FakeApiServer&) { return PodRef{"ml", "p", "u"}; },
                  absl::StatusCode::kNotFound, "pods \"p\" not found", false},
        EvictCase{"ReplacedUnderTheSameNameIsAFailedPrecondition",
                  [](KubePodApiTest& t, FakeApiServer&) {
                    PodRef pod = t.AddPod("p");
                    pod.uid = "the-pod-we-chose";
                    return pod;
                  },
                  absl::StatusCode::kFailedPrecondition, "the UID in the precondition (the-pod-we-chose)", true},
        EvictCase{"ABudgetsRefusalIsResourceExhaustedNamingTheBudget",
                  [](KubePodApiTest& t, FakeApiServer& server) {
                    const PodRef pod = t.AddPod("p");
                    EXPECT_TRUE(server.SetPodPhase("ml", "p", "Running").ok());
                    server.RefuseEvictions("ml", "p", "web-budget");
                    return pod;
                  },
                  absl::StatusCode::kResourceExhausted,
                  "HTTP 429: Cannot evict pod as it would violate the pod's disruption budget. The disruption "
                  "budget web-budget needs 1 healthy pods",
                  true},
        EvictCase{"ABudgetDoesNotGuardAPendingPod",
                  [](KubePodApiTest& t, FakeApiServer& server) {
                    const PodRef pod = t.AddPod("p");
                    server.RefuseEvictions("ml", "p", "web-budget");
                    return pod;
                  },
                  absl::StatusCode::kOk, "", false},
        EvictCase{"RbacIsPermissionDenied",
                  [](KubePodApiTest& t, FakeApiServer& server) {
                    server.FailNext({"POST"}, 403);
                    return t.AddPod("p");
                  },
                  absl::StatusCode::kPermissionDenied, "HTTP 403", true},
        EvictCase{"AServerErrorIsUnavailable",
                  [](KubePodApiTest& t, FakeApiServer& server) {
                    server.FailNext({"POST"}, 500);
                    return t.AddPod("p");
                  },
                  absl::StatusCode::kUnavailable, "HTTP 500", true}),
    [](const auto& info) { return info.param.name; });

TEST_F(KubePodApiTest, EvictGivesUpAtItsDeadline) {
  const PodRef pod = AddPod("slow");
  // kube-apiserver retries a uid conflict for ~10 s before answering; a
  // deadline sooner than the answer ends the call.
  server_.DelayNext({"POST"}, std::chrono::milliseconds(3000));
  const absl::Status status = api_->Evict(pod, absl::Now() + absl::Milliseconds(200));
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
}

TEST_F(KubePodApiTest, NominatePatchesTheStatusSubresourceAndAnEmptyNodeClearsIt) {
  const PodRef pod = AddPod("preemptor", "");
  ASSERT_TRUE(api_->Nominate(pod, "n7", Soon()).ok());
  EXPECT_EQ((*server_.Pod("ml", "preemptor"))["status"]["nominatedNodeName"], "n7");
  ASSERT_TRUE(api_->Nominate(pod, "", Soon()).ok());
  EXPECT_FALSE((*server_.Pod("ml", "preemptor"))["status"].contains("nominatedNodeName"));

  const std::vector<testing::RecordedRequest> patches = server_.Requests("PATCH");
  ASSERT_EQ(patches.size(), 2u);
  for (const testing::RecordedRequest& r : patches) {
    EXPECT_EQ(r.target, "/api/v1/namespaces/ml/pods/preemptor/status");
    EXPECT_EQ(r.headers.at("content-type"), "application/merge-patch+json");
  }
  EXPECT_EQ(json::parse(patches[0].body),
            json::parse(R"({"metadata":{"uid":")" + pod.uid + R"("},"status":{"nominatedNodeName":"n7"}})"));
  EXPECT_EQ(json::parse(patches[1].body),
            json::parse(R"({"metadata":{"uid":")" + pod.uid + R"("},"status":{"nominatedNodeName":null}})"));
}

TEST_F(KubePodApiTest, NominateRefusesAReplacedPodAndAMissingOne) {
  AddPod("preemptor", "");
  // The server answers 422 "metadata.uid: field is immutable": the pod was replaced.
  const absl::Status replaced = api_->Nominate({"ml", "preemptor", "the-pod-we-chose"}, "n7", Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(replaced)) << replaced;
  EXPECT_THAT(std::string(replaced.message()), HasSubstr("HTTP 422"));
  EXPECT_FALSE((*server_.Pod("ml", "preemptor"))["status"].contains("nominatedNodeName"));
  EXPECT_TRUE(absl::IsNotFound(api_->Nominate({"ml", "gone", "u"}, "n7", Soon())));
}

TEST_F(KubePodApiTest, NominateGivesUpAtItsDeadline) {
  const PodRef pod = AddPod("preemptor", "");
  server_.DelayNext({"PATCH"}, std::chrono::milliseconds(3000));
  EXPECT_TRUE(absl::IsDeadlineExceeded(api_->Nominate(pod, "n7", absl::Now() + absl::Milliseconds(200))));
}

}  // namespace
}  // namespace tessera::k8s
