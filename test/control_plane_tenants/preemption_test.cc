// Preemption and tenant quotas on a real kube-apiserver and kube-scheduler
// v1.26, with Tessera as the extender.
//
// The pods here carry no GPU extended resources, so kube-scheduler's own
// filters pass every node and its preemption dry run finds nothing to evict
// (the 1.26 limit in extender/service/preemption_loop.h): what is evicted is
// Tessera's choice, through the Eviction API.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/testing/assignment_audit.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kLow = "tessera-test-low";
constexpr const char* kHigh = "tessera-test-high";

class PreemptionTest : public ControlPlaneTest {
 protected:
  void SetUp() override {
    ControlPlaneTest::SetUp();
    if (::testing::Test::IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(plane().CreatePriorityClass(kLow, 100).ok());
    ASSERT_TRUE(plane().CreatePriorityClass(kHigh, 1000000).ok());
  }

  // A pod asking `fraction` of one GPU at `priority_class`, of `tenant` (none when empty).
  absl::Status GpuPod(const std::string& name, const std::string& fraction, const std::string& priority_class,
                      const std::string& tenant = "") {
    PodSpec spec{.namespace_name = ns(),
                 .name = name,
                 .annotations = {{"tessera.io/gpu-fraction", fraction}},
                 .node_selector = {{"tessera.io/test", ns()}}};
    if (!tenant.empty()) spec.labels["tessera.io/tenant"] = tenant;
    spec.priority_class_name = priority_class;
    return plane().CreatePod(spec).status();
  }

  // The GPU index a bound pod's assignment names (-1: none).
  static int GpuOf(const json& pod) {
    const std::string text = Annotation(pod, "tessera.io/gpu-assignment");
    if (text.empty()) return -1;
    return json::parse(text)["gpus"][0]["index"].get<int>();
  }

  static std::map<std::string, json> ByName(const std::vector<json>& pods) {
    std::map<std::string, json> out;
    for (const json& p : pods) out[p["metadata"]["name"]] = p;
    return out;
  }

  // Audits the pods as listed now, keeping what is wrong: called at every
  // poll while preemption runs, so an over-commit that lasted a moment shows.
  void AuditDuring(const std::vector<json>& pods, const std::string& node, int gpus) {
    AuditedNode audited;
    audited.gpus = gpus;
    audited.memory = MemoryMiB(81920);
    for (std::string& p : AuditAssignments(pods, {{node, audited}}).problems) seen_problems_.push_back(std::move(p));
  }
  std::vector<std::string> seen_problems_;

  void ExpectNothingOverCommitted(const std::string& node, int gpus) {
    absl::StatusOr<std::vector<json>> pods = plane().ListPods(ns());
    ASSERT_TRUE(pods.ok());
    AuditedNode audited;
    audited.gpus = gpus;
    audited.memory = MemoryMiB(81920);
    const AssignmentAudit audit = AuditAssignments(*pods, {{node, audited}});
    EXPECT_TRUE(audit.clean()) << ::testing::PrintToString(audit.problems);
  }
};

// The value of the sample that begins `series` in Tessera's /metrics (0 when absent).
double Sample(const std::string& metrics, const std::string& series) {
  size_t at = 0;
  while ((at = metrics.find(series, at)) != std::string::npos) {
    if (at == 0 || metrics[at - 1] == '\n') return std::stod(metrics.substr(at + series.size() + 1));
    at += series.size();
  }
  return 0;
}

// `name` is bound and `count` pods are left: it took the place of the victims.
bool BoundInPlace(const std::vector<json>& pods, const std::string& name, size_t count) {
  for (const json& p : pods) {
    if (p["metadata"]["name"] == name && IsBound(p)) return pods.size() == count;
  }
  return false;
}

bool BoundCount(const std::vector<json>& pods, size_t want) {
  size_t bound = 0;
  for (const json& p : pods) bound += IsBound(p) ? 1 : 0;
  return bound == want;
}

TEST_F(PreemptionTest, AHighPriorityHalfGpuPodPreemptsExactlyTheQuarterPodsThatFreeOneGpu) {
  absl::StatusOr<json> node = Node("a", 2);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(GpuPod("low-" + std::to_string(i), "0.25", kLow).ok());
  absl::StatusOr<std::vector<json>> full =
      plane().WaitForPods(ns(), "the eight quarter pods to fill both GPUs", [](const auto& p) { return BoundCount(p, 8); });
  ASSERT_TRUE(full.ok()) << full.status() << plane().LogTails();
  const std::map<std::string, json> before = ByName(*full);

  ASSERT_TRUE(GpuPod("urgent", "0.5", kHigh).ok());
  absl::StatusOr<std::vector<json>> after = plane().WaitForPods(
      ns(), "the urgent pod to be bound in place of two quarter pods",
      [&](const std::vector<json>& pods) {
        AuditDuring(pods, node_name, 2);
        return BoundInPlace(pods, "urgent", 7);
      },
      absl::Seconds(60));
  ASSERT_TRUE(after.ok()) << after.status() << plane().LogTails();

  const std::map<std::string, json> now = ByName(*after);
  std::set<int> freed;
  int evicted = 0;
  for (const auto& [name, pod] : before) {
    if (now.contains(name)) continue;
    ++evicted;
    freed.insert(GpuOf(pod));
  }
  EXPECT_EQ(evicted, 2) << "exactly the two quarters that make room for a half";
  ASSERT_EQ(freed.size(), 1u) << "both victims held the same GPU";
  EXPECT_EQ(GpuOf(now.at("urgent")), *freed.begin());
  ExpectNothingOverCommitted(node_name, 2);
  EXPECT_THAT(seen_problems_, ::testing::IsEmpty()) << "an over-commit seen while preemption ran";
}

TEST_F(PreemptionTest, WithGpuExtendedResourcesKubeSchedulersPreemptionAsksTesseraWhichVictimsFreeOneGpu) {
  // Pods that request tessera.io/gpu-milli (as the admission webhook writes
  // it) on a node whose capacity Tessera publishes: kube-scheduler's own dry
  // run sees the node full, finds victims by its own lights and asks the
  // preempt verb, which answers with the two quarters of one GPU.
  absl::StatusOr<json> node = Node("a", 2);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  auto pod = [&](const std::string& name, const std::string& fraction, int64_t milli, const std::string& priority) {
    PodSpec spec{.namespace_name = ns(),
                 .name = name,
                 .annotations = {{"tessera.io/gpu-fraction", fraction}},
                 .node_selector = {{"tessera.io/test", ns()}}};
    spec.priority_class_name = priority;
    spec.resources = {{"tessera.io/gpu-milli", std::to_string(milli)}};
    return plane().CreatePod(spec).status();
  };
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(pod("low-" + std::to_string(i), "0.25", 250, kLow).ok());
  absl::StatusOr<std::vector<json>> full = plane().WaitForPods(
      ns(), "the eight quarter pods (once the node's gpu-milli is published)",
      [](const auto& p) { return BoundCount(p, 8); }, absl::Seconds(60));
  ASSERT_TRUE(full.ok()) << full.status() << plane().LogTails();
  const std::map<std::string, json> before = ByName(*full);
  const std::string metrics_before = plane().TesseraGet("/metrics").body;

  ASSERT_TRUE(pod("urgent", "0.5", 500, kHigh).ok());
  absl::StatusOr<std::vector<json>> after = plane().WaitForPods(
      ns(), "the urgent pod bound in place of two quarters",
      [](const std::vector<json>& pods) { return BoundInPlace(pods, "urgent", 7); },
      absl::Seconds(60));
  ASSERT_TRUE(after.ok()) << after.status() << plane().LogTails();
  const std::map<std::string, json> now = ByName(*after);
  std::set<int> freed;
  for (const auto& [name, p] : before) {
    if (!now.contains(name)) freed.insert(GpuOf(p));
  }
  EXPECT_EQ(now.size(), 7u);
  ASSERT_EQ(freed.size(), 1u) << "both victims held the same GPU";
  EXPECT_EQ(GpuOf(now.at("urgent")), *freed.begin());
  const std::string metrics = plane().TesseraGet("/metrics").body;
  EXPECT_GT(Sample(metrics, "tessera_preempt_nodes_total{answer=\"kept\"}"),
            Sample(metrics_before, "tessera_preempt_nodes_total{answer=\"kept\"}"))
      << "kube-scheduler's preemption asked the preempt verb";
  EXPECT_EQ(Sample(metrics, "tessera_preemptions_total"), Sample(metrics_before, "tessera_preemptions_total"))
      << "Tessera's own preemption had nothing to do";
  ExpectNothingOverCommitted(node_name, 2);
}

TEST_F(PreemptionTest, APodThatWouldTakeItsTenantOverMaxIsRefusedWithTheTenantNamed) {
  ASSERT_TRUE(Node("a", 4).ok());
  ASSERT_TRUE(GpuPod("r1", "1", kLow, "research").ok());
  ASSERT_TRUE(GpuPod("r2", "1", kLow, "research").ok());
  ASSERT_TRUE(plane().WaitForPods(ns(), "research's two GPUs", [](const auto& p) { return BoundCount(p, 2); }).ok());
  ASSERT_TRUE(GpuPod("r3", "0.5", kLow, "research").ok());
  absl::StatusOr<std::vector<json>> refused = plane().WaitForPods(ns(), "r3 to be refused", [](const auto& pods) {
    for (const json& p : pods) {
      if (p["metadata"]["name"] == "r3") return !UnschedulableMessage(p).empty();
    }
    return false;
  });
  ASSERT_TRUE(refused.ok()) << refused.status() << plane().LogTails();
  for (const json& p : *refused) {
    if (p["metadata"]["name"] != "r3") continue;
    EXPECT_FALSE(IsBound(p));
    EXPECT_THAT(UnschedulableMessage(p), HasSubstr("tenant research would hold 2500 gpu-milli, over its max 2000"));
  }
  // /debug shows the tenant as the accounting saw it (it ticks every second).
  ASSERT_TRUE(Eventually(
      [&] {
        const json debug = json::parse(plane().TesseraGet("/debug").body, nullptr, false);
        if (!debug.is_object() || !debug.contains("tenants")) return false;
        for (const json& t : debug["tenants"]) {
          if (t["name"] == "research") return t["used"]["gpuMilli"] == 2000 && t["borrowed"]["gpuMilli"] == 1000;
        }
        return false;
      },
      absl::Seconds(10), "/debug to show research using 2000 gpu-milli, 1000 of them borrowed"))
      << plane().TesseraGet("/debug").body;
}

TEST_F(PreemptionTest, ATenantBorrowsIdleGpusAndGivesThemBackWhenTheOwnerNeedsThem) {
  absl::StatusOr<json> node = Node("a", 2);
  ASSERT_TRUE(node.ok());
  // research is guaranteed one GPU and borrows the second, which is serving's.
  ASSERT_TRUE(GpuPod("research-1", "1", kLow, "research").ok());
  ASSERT_TRUE(plane().WaitForPods(ns(), "research's first pod", [](const auto& p) { return BoundCount(p, 1); }).ok());
  ASSERT_TRUE(GpuPod("research-2", "1", kLow, "research").ok());
  ASSERT_TRUE(plane().WaitForPods(ns(), "research borrowing", [](const auto& p) { return BoundCount(p, 2); }).ok());

  // serving, within its guarantee, reclaims it: the borrowed pod goes.
  ASSERT_TRUE(GpuPod("serving-1", "1", kHigh, "serving").ok());
  absl::StatusOr<std::vector<json>> after = plane().WaitForPods(
      ns(), "serving's pod bound in place of research's borrowed one",
      [](const std::vector<json>& pods) { return BoundInPlace(pods, "serving-1", 2); },
      absl::Seconds(60));
  ASSERT_TRUE(after.ok()) << after.status() << plane().LogTails();
  const std::map<std::string, json> now = ByName(*after);
  EXPECT_TRUE(now.contains("research-1")) << "research keeps its guarantee; the younger, borrowed pod went";
  EXPECT_FALSE(now.contains("research-2"));
  ExpectNothingOverCommitted((*node)["metadata"]["name"], 2);
}

}  // namespace
}  // namespace tessera::testing
