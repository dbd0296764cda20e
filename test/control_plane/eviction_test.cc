// Tessera's preemption writes against the real API server (v1.26): the
// eviction subresource, PodDisruptionBudgets and status.nominatedNodeName.
// What the real server does here is what KubePodApi's errors mean and what
// the fake API server (test/testing/fake_api_server.h) copies.
//
// Found here, and what preemption must plan for:
// * A budget guards only a Running pod. A Pending pod, bound or not, is
//   evicted whatever its budgets say. Here no kubelet runs, so a pod is
//   Running only because the test writes its status as a kubelet would.
// * An accepted eviction writes a DisruptionTarget condition, then the
//   deletion. A pod whose terminationGracePeriodSeconds is 0 (or that is
//   unbound) is gone when the eviction returns; a bound pod with a grace
//   period is only marked (metadata.deletionTimestamp = now + grace) and goes
//   when its kubelet has stopped it: with a kubelet, up to its grace period
//   later (30 s by default); without one, never.
// * A uid precondition that fails on a pod that is not Running is retried by
//   the server for ~10 s before it answers 409; on a Running pod it answers
//   at once.
// * A merge patch whose metadata.uid is not the pod's answers 422 ("field is
//   immutable"), not 409.
#include <atomic>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "k8s/client/pod_api.h"
#include "test/testing/control_plane.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EvictionTest : public ControlPlaneClientTest {
 protected:
  void SetUp() override {
    ControlPlaneClientTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    pods_ = std::make_unique<k8s::KubePodApi>(client());
    absl::StatusOr<json> node = Node("a", 1);
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = (*node)["metadata"]["name"].get<std::string>();
  }

  static absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

  // A pod labelled app=<name> for a scheduler nobody runs, so that only the
  // test binds it.
  k8s::PodRef CreatePod(const std::string& name, int grace_seconds) {
    const json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}, {"namespace", ns()}, {"labels", {{"app", name}}}}},
                      {"spec",
                       {{"schedulerName", "nobody"},
                        {"terminationGracePeriodSeconds", grace_seconds},
                        {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
    absl::StatusOr<k8s::ApiResponse> r = plane().Send("POST", absl::StrCat("/api/v1/namespaces/", ns(), "/pods"),
                                                      pod.dump());
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    return {ns(), name, r.ok() && r->status == 201 ? json::parse(r->body)["metadata"]["uid"].get<std::string>() : ""};
  }

  k8s::PodRef CreateBoundPod(const std::string& name, int grace_seconds) {
    k8s::PodRef pod = CreatePod(name, grace_seconds);
    const absl::Status bound = pods_->Bind(pod, node_, {}, Soon());
    EXPECT_TRUE(bound.ok()) << bound;
    return pod;
  }

  // What the pod's kubelet would report once its containers run.
  void MarkRunning(const std::string& name) {
    const json status = {
        {"status", {{"phase", "Running"}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
    absl::StatusOr<k8s::ApiResponse> r = plane().Send(
        "PATCH", absl::StrCat("/api/v1/namespaces/", ns(), "/pods/", name, "/status"), status.dump(),
        "application/merge-patch+json");
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }

  // A budget that allows no disruption of the pods labelled app=<app>, with
  // the status the disruption controller would write (none runs here; an
  // unwritten status also refuses, "still being processed by the server").
  void CreateBudget(const std::string& name, const std::string& app) {
    const std::string path = absl::StrCat("/apis/policy/v1/namespaces/", ns(), "/poddisruptionbudgets");
    const json budget = {{"apiVersion", "policy/v1"},
                         {"kind", "PodDisruptionBudget"},
                         {"metadata", {{"name", name}}},
                         {"spec", {{"maxUnavailable", 0}, {"selector", {{"matchLabels", {{"app", app}}}}}}}};
    absl::StatusOr<k8s::ApiResponse> r = plane().Send("POST", path, budget.dump());
    ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    const json status = {{"status",
                          {{"observedGeneration", 1},
                           {"disruptionsAllowed", 0},
                           {"currentHealthy", 1},
                           {"desiredHealthy", 1},
                           {"expectedPods", 1}}}};
    r = plane().Send("PATCH", absl::StrCat(path, "/", name, "/status"), status.dump(), "application/merge-patch+json");
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }

  void DeleteBudget(const std::string& name) {
    absl::StatusOr<k8s::ApiResponse> r =
        plane().Send("DELETE", absl::StrCat("/apis/policy/v1/namespaces/", ns(), "/poddisruptionbudgets/", name));
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }

  // The pod as stored; nullopt when it is gone.
  std::optional<json> Stored(const std::string& name) {
    absl::StatusOr<k8s::ApiResponse> r =
        plane().Send("GET", absl::StrCat("/api/v1/namespaces/", ns(), "/pods/", name));
    EXPECT_TRUE(r.ok() && (r->status == 200 || r->status == 404)) << (r.ok() ? r->body : r.status().ToString());
    if (!r.ok() || r->status != 200) return std::nullopt;
    return json::parse(r->body);
  }

  // The watch events of the pod after resourceVersion `from`: a watch that
  // replays them and ends after a second.
  std::vector<json> EventsSince(const std::string& name, const std::string& from) {
    std::vector<json> events;
    const std::atomic<bool> stop{false};
    absl::StatusOr<k8s::StreamEnd> end = client().Stream(
        absl::StrCat("/api/v1/namespaces/", ns(), "/pods?watch=1&timeoutSeconds=1&resourceVersion=", from,
                     "&fieldSelector=metadata.name%3D", name),
        absl::Seconds(10), stop,
        [&](std::string_view line) {
          events.push_back(json::parse(line));
          return true;
        },
        [] {});
    EXPECT_TRUE(end.ok() && end->status == 200) << (end.ok() ? end->error_body : end.status().ToString());
    return events;
  }

  std::unique_ptr<k8s::KubePodApi> pods_;
  std::string node_;
};

std::vector<std::string> Types(const std::vector<json>& events) {
  std::vector<std::string> types;
  for (const json& e : events) types.push_back(e["type"]);
  return types;
}

TEST_F(EvictionTest, ABudgetRefusesToEvictARunningPodNamingItselfAndOnceItIsGoneThePodGoesAtOnce) {
  const k8s::PodRef pod = CreateBoundPod("guarded", 0);
  MarkRunning("guarded");
  CreateBudget("guarded-budget", "guarded");

  const absl::Status refused = pods_->Evict(pod, Soon());
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("disruption budget guarded-budget"));
  ASSERT_TRUE(Stored("guarded").has_value());
  EXPECT_FALSE((*Stored("guarded"))["metadata"].contains("deletionTimestamp"));
  // The budget is checked before the uid.
  EXPECT_TRUE(absl::IsResourceExhausted(pods_->Evict({ns(), "guarded", "another-uid"}, Soon())));

  DeleteBudget("guarded-budget");
  // Without a budget, a Running pod's uid mismatch is answered at once.
  const absl::Status replaced = pods_->Evict({ns(), "guarded", "another-uid"}, Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(replaced)) << replaced;
  EXPECT_THAT(std::string(replaced.message()), HasSubstr("does not match the UID in record"));
  ASSERT_TRUE(Stored("guarded").has_value());

  const absl::Status evicted = pods_->Evict(pod, Soon());
  EXPECT_TRUE(evicted.ok()) << evicted;
  EXPECT_FALSE(Stored("guarded").has_value()) << "a pod whose grace period is 0 is deleted by the eviction itself";
  EXPECT_TRUE(absl::IsNotFound(pods_->Evict(pod, Soon())));
}

TEST_F(EvictionTest, ABudgetDoesNotGuardABoundPendingPodAndTheWatchSeesTheConditionThenTheDeletion) {
  const k8s::PodRef pod = CreateBoundPod("not-started", 0);
  CreateBudget("not-started-budget", "not-started");
  const std::string from = (*Stored("not-started"))["metadata"]["resourceVersion"];

  const absl::Status evicted = pods_->Evict(pod, Soon());
  EXPECT_TRUE(evicted.ok()) << evicted;
  EXPECT_FALSE(Stored("not-started").has_value());

  const std::vector<json> events = EventsSince("not-started", from);
  ASSERT_THAT(Types(events), ElementsAre("MODIFIED", "MODIFIED", "DELETED"));
  const json& conditions = events[0]["object"]["status"]["conditions"];
  ASSERT_TRUE(conditions.is_array());
  EXPECT_EQ(conditions.back()["type"], "DisruptionTarget");
  EXPECT_EQ(conditions.back()["reason"], "EvictionByEvictionAPI");
  EXPECT_TRUE(events[1]["object"]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(events[1]["object"]["metadata"]["deletionGracePeriodSeconds"], 0);
}

TEST_F(EvictionTest, ABoundPodWithAGracePeriodIsOnlyMarkedForDeletionAndWaitsForItsKubelet) {
  const k8s::PodRef pod = CreateBoundPod("graceful", 30);
  MarkRunning("graceful");
  const absl::Status evicted = pods_->Evict(pod, Soon());
  EXPECT_TRUE(evicted.ok()) << evicted;
  const std::optional<json> marked = Stored("graceful");
  ASSERT_TRUE(marked.has_value()) << "a kubelet must stop it first; none runs here, so it stays";
  EXPECT_TRUE((*marked)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ((*marked)["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ((*marked)["status"]["phase"], "Running");
  // Evicting it again is accepted and changes nothing.
  EXPECT_TRUE(pods_->Evict(pod, Soon()).ok());
  EXPECT_EQ((*Stored("graceful"))["metadata"]["resourceVersion"], (*marked)["metadata"]["resourceVersion"]);
}

TEST_F(EvictionTest, AReplacedPendingPodIsRefusedOnlyAfterTheServerHasRetriedForSeconds) {
  CreatePod("pending", 0);
  const k8s::PodRef chosen{ns(), "pending", "the-pod-we-chose"};
  const absl::Status impatient = pods_->Evict(chosen, absl::Now() + absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(impatient)) << impatient;

  const absl::Time start = absl::Now();
  const absl::Status refused = pods_->Evict(chosen, absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  std::cout << "the 409 for a pending pod's uid mismatch came after " << absl::FormatDuration(absl::Now() - start)
            << std::endl;
  EXPECT_TRUE(Stored("pending").has_value());
}

TEST_F(EvictionTest, NominateSetsAndClearsThePendingPodsNominatedNodeAndRefusesAReplacedPod) {
  const k8s::PodRef pod = CreatePod("preemptor", 0);
  const absl::Status nominated = pods_->Nominate(pod, node_, Soon());
  ASSERT_TRUE(nominated.ok()) << nominated;
  EXPECT_EQ((*Stored("preemptor"))["status"]["nominatedNodeName"], node_);

  // The server answers 422 (metadata.uid is immutable), which Nominate and
  // Annotate report as FailedPrecondition.
  const json patch = {{"metadata", {{"uid", "another-uid"}}}, {"status", {{"nominatedNodeName", "elsewhere"}}}};
  absl::StatusOr<k8s::ApiResponse> raw =
      plane().Send("PATCH", absl::StrCat("/api/v1/namespaces/", ns(), "/pods/preemptor/status"), patch.dump(),
                   "application/merge-patch+json");
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->status, 422) << raw->body;
  const absl::Status replaced = pods_->Nominate({ns(), "preemptor", "another-uid"}, "elsewhere", Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(replaced)) << replaced;
  EXPECT_TRUE(absl::IsFailedPrecondition(pods_->Annotate({ns(), "preemptor", "another-uid"}, {{"tessera.io/x", "1"}})));
  EXPECT_EQ((*Stored("preemptor"))["status"]["nominatedNodeName"], node_);

  ASSERT_TRUE(pods_->Nominate(pod, "", Soon()).ok());
  EXPECT_FALSE((*Stored("preemptor"))["status"].contains("nominatedNodeName"));
  EXPECT_TRUE(absl::IsNotFound(pods_->Nominate({ns(), "nobody-here", "u"}, node_, Soon())));
}

}  // namespace
}  // namespace tessera::testing
