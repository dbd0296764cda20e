// Tessera end to end against a fake API server (tessera_stack.h): filter,
// prioritize and bind as kube-scheduler calls them; restarts; failures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "test/integration/tessera_stack.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/http_client.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::BindArgs;
using testing::FakeApiServer;
using testing::FilterArgs;
using testing::GpuNode;
using testing::PendingPod;
using testing::Tessera;
using testing::WaitFor;

class KubernetesEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start().ok());
    ASSERT_TRUE(api_.AddNode(GpuNode("small", 1)).ok());
    ASSERT_TRUE(api_.AddNode(GpuNode("big", 4)).ok());
    ASSERT_TRUE(api_.AddNode(FakeApiServer::MinimalNode("cpu-only")).ok());
  }
  nlohmann::json AddPod(nlohmann::json pod) { return *api_.AddPod(std::move(pod)); }

  FakeApiServer api_;
};

TEST_F(KubernetesEndToEnd, NodesFromTheWatchAnswerFilterAndPrioritizeByName) {
  Tessera tessera(api_);
  testing::HttpClient http(tessera.port());
  ASSERT_TRUE(tessera.WaitForSync());
  EXPECT_EQ(http.Get("/readyz").status, 200);
  const nlohmann::json pod = AddPod(PendingPod("p", "0.5"));
  const testing::HttpAnswer filter = http.Post("/filter", FilterArgs(pod, {"small", "big", "cpu-only", "unknown"}));
  ASSERT_EQ(filter.status, 200) << filter.body;
  const nlohmann::json result = nlohmann::json::parse(filter.body);
  // big fits too; the shortlist passes on the node the policy ranks best.
  EXPECT_EQ(result["NodeNames"], (nlohmann::json{"small"}));
  EXPECT_TRUE(result["FailedAndUnresolvableNodes"].contains("cpu-only")) << filter.body;  // a node without GPUs
  EXPECT_EQ(result["FailedNodes"]["unknown"], "node is not in Tessera's cluster model (yet)") << filter.body;
  const testing::HttpAnswer prioritize = http.Post("/prioritize", FilterArgs(pod, {"small", "big"}));
  ASSERT_EQ(prioritize.status, 200) << prioritize.body;
  EXPECT_EQ(nlohmann::json::parse(prioritize.body).size(), 2u);
}

TEST_F(KubernetesEndToEnd, BindWritesTheAssignmentWithTheBindingInOneCallAndTheWatchConfirmsIt) {
  Tessera tessera(api_);
  testing::HttpClient http(tessera.port());
  ASSERT_TRUE(tessera.WaitForSync());
  const nlohmann::json pod = AddPod(PendingPod("p", "0.25"));
  ASSERT_TRUE(WaitFor([&] { return api_.Pod("ml", "p").has_value(); }));
  api_.ClearRequests();

  const testing::HttpAnswer bind = http.Post("/bind", BindArgs(pod, "big"));
  ASSERT_EQ(bind.status, 200);
  EXPECT_EQ(bind.body, R"({"Error":""})");
  // One write: the Binding carries the assignment onto the pod.
  std::vector<std::string> writes;
  for (const auto& r : api_.Requests()) {
    if (r.method != "GET") writes.push_back(absl::StrCat(r.method, " ", r.path));
  }
  EXPECT_EQ(writes, (std::vector<std::string>{"POST /api/v1/namespaces/ml/pods/p/binding"}));
  const nlohmann::json stored = *api_.Pod("ml", "p");
  EXPECT_EQ(stored["spec"]["nodeName"], "big");
  absl::StatusOr<GpuAssignment> assignment =
      k8s::ParseGpuAssignment(stored["metadata"]["annotations"][std::string(k8s::kGpuAssignment)].get<std::string>());
  ASSERT_TRUE(assignment.ok()) << assignment.status();
  EXPECT_EQ(assignment->node, "big");
  EXPECT_EQ(assignment->gpus.at(0).guaranteed.value(), 250);
  EXPECT_EQ(stored["metadata"]["annotations"][std::string(k8s::kVisibleDevices)], "0");
  // Counted at once; confirmed when the watch shows the bound pod.
  EXPECT_EQ(tessera.Held("big", 0), 250);
  EXPECT_TRUE(WaitFor([&] { return tessera.model().reservation_count() == 0; }));
  EXPECT_EQ(tessera.Held("big", 0), 250);
}

TEST_F(KubernetesEndToEnd, PodsRacingForTheLastShareOfAGpuBindExactlyOnce) {
  Tessera tessera(api_);
  ASSERT_TRUE(tessera.WaitForSync());
  constexpr int kPods = 8;
  std::vector<nlohmann::json> pods;
  for (int i = 0; i < kPods; ++i) pods.push_back(AddPod(PendingPod(absl::StrCat("racer-", i), "0.6")));
  std::atomic<int> bound{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      testing::HttpClient http(tessera.port());
      const testing::HttpAnswer a = http.Post("/bind", BindArgs(pods[static_cast<size_t>(i)], "small"));
      if (a.body == R"({"Error":""})") {
        ++bound;
      } else if (a.body.find("can no longer take pod") != std::string::npos) {
        ++refused;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bound.load(), 1);
  EXPECT_EQ(refused.load(), kPods - 1);
  int on_small = 0;
  for (int i = 0; i < kPods; ++i) on_small += (*api_.Pod("ml", absl::StrCat("racer-", i)))["spec"].contains("nodeName");
  EXPECT_EQ(on_small, 1);
  EXPECT_EQ(tessera.Held("small", 0), 600);
}

TEST_F(KubernetesEndToEnd, ARestartedTesseraHoldsTheSameAllocationsAndDeletionFreesThem) {
  std::vector<int64_t> before;
  {
    Tessera first(api_);
    testing::HttpClient http(first.port());
    ASSERT_TRUE(first.WaitForSync());
    for (const auto& [pod_name, fraction] : std::vector<std::pair<std::string, std::string>>{{"a", "0.5"}, {"b", "0.3"}, {"c", "1"}}) {
      // A copy for the lambda: clang 14 cannot capture a structured binding.
      const std::string name = pod_name;
      const nlohmann::json pod = AddPod(PendingPod(name, fraction));
      ASSERT_TRUE(WaitFor([&] { return api_.Pod("ml", name).has_value(); }));
      ASSERT_EQ(http.Post("/bind", BindArgs(pod, "big")).body, R"({"Error":""})");
    }
    ASSERT_TRUE(WaitFor([&] { return first.model().reservation_count() == 0; }));
    for (int g = 0; g < 4; ++g) before.push_back(first.Held("big", g));
  }
  Tessera second(api_);
  ASSERT_TRUE(second.WaitForSync());
  std::vector<int64_t> after;
  for (int g = 0; g < 4; ++g) after.push_back(second.Held("big", g));
  EXPECT_EQ(before, after);
  int64_t total = 0;
  for (int64_t v : after) total += v;
  EXPECT_EQ(total, 1800);

  ASSERT_TRUE(api_.DeletePod("ml", "c").ok());
  EXPECT_TRUE(WaitFor([&] {
    int64_t sum = 0;
    for (int g = 0; g < 4; ++g) sum += second.Held("big", g);
    return sum == 800;
  }));
}

TEST_F(KubernetesEndToEnd, AFailedBindingAnswersAnErrorAndReleasesTheGpus) {
  Tessera tessera(api_);
  testing::HttpClient http(tessera.port());
  ASSERT_TRUE(tessera.WaitForSync());
  const nlohmann::json pod = AddPod(PendingPod("unlucky", "1"));
  ASSERT_TRUE(WaitFor([&] { return api_.Pod("ml", "unlucky").has_value(); }));
  testing::RequestMatch bindings;
  bindings.method = "POST";
  api_.FailNext(bindings, 500);
  const testing::HttpAnswer a = http.Post("/bind", BindArgs(pod, "small"));
  EXPECT_THAT(a.body, HasSubstr("cannot bind pod ml/unlucky to node small"));
  EXPECT_THAT(a.body, HasSubstr("HTTP 500"));
  EXPECT_EQ(tessera.Held("small", 0), 0);
  // kube-scheduler retries; this time it works.
  EXPECT_EQ(http.Post("/bind", BindArgs(pod, "small")).body, R"({"Error":""})");
  EXPECT_EQ(tessera.Held("small", 0), 1000);
}

TEST_F(KubernetesEndToEnd, ABindingConflictIsAnErrorNotAnAllocationAndRecordsNothing) {
  Tessera tessera(api_);
  testing::HttpClient http(tessera.port());
  ASSERT_TRUE(tessera.WaitForSync());
  const nlohmann::json pod = AddPod(PendingPod("p", "0.5"));
  ASSERT_TRUE(WaitFor([&] { return api_.Pod("ml", "p").has_value(); }));
  api_.ConflictNextBinding();
  const testing::HttpAnswer a = http.Post("/bind", BindArgs(pod, "small"));
  EXPECT_THAT(a.body, HasSubstr("cannot bind pod ml/p to node small"));
  EXPECT_EQ(tessera.Held("small", 0), 0);
  const nlohmann::json stored = *api_.Pod("ml", "p");
  EXPECT_FALSE(stored["spec"].contains("nodeName"));
  EXPECT_FALSE(stored["metadata"].contains("annotations") &&
               stored["metadata"]["annotations"].contains(std::string(k8s::kGpuAssignment)))
      << "the assignment lands with the binding or not at all";
}

TEST_F(KubernetesEndToEnd, DebugShowsTheWatchAndBindsInFlight) {
  Tessera tessera(api_);
  testing::HttpClient http(tessera.port());
  ASSERT_TRUE(tessera.WaitForSync());
  const nlohmann::json debug = nlohmann::json::parse(http.Get("/debug").body);
  EXPECT_EQ(debug["watches"]["pods"]["synced"], true);
  EXPECT_EQ(debug["nodes"], 3);
  EXPECT_TRUE(debug["inFlight"].empty());
}

}  // namespace
}  // namespace tessera
