// What filter tells the program after deciding, through the SchedulerHandle:
// each named step (learn the arrival, queue preemption, record the refusal)
// happens exactly where the decision calls for it, and never for a pod or a
// model the decision did not get to.
#include "extender/service/extender_service.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using json = nlohmann::json;

// A handle that records what the service tells it.
class RecordingHandle final : public SchedulerHandle {
 public:
  std::shared_ptr<const ClusterSnapshot> snapshot;
  std::shared_ptr<const ProfileSet> profiles;
  bool synced = true;
  mutable std::vector<std::string> arrived, unschedulable, preempted;
  mutable RecentRefusals refusal_log;

  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Snapshot() const override { return snapshot; }
  [[nodiscard]] std::shared_ptr<const ProfileSet> Profiles() const override { return profiles; }
  [[nodiscard]] bool Synced() const override { return synced; }
  void PodArrived(std::string_view uid, const PodGpuRequest&) const override { arrived.emplace_back(uid); }
  void PodUnschedulable(UnschedulablePod pod) const override { unschedulable.push_back(pod.uid); }
  void SchedulerPreempted(std::string_view uid) const override { preempted.emplace_back(uid); }
  [[nodiscard]] RecentRefusals* refusals() const override { return &refusal_log; }
};

std::string FilterBody(const std::string& fraction) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "p-uid"}}}, {"spec", {{"priority", 10}}}};
  pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  return json({{"Pod", pod}, {"NodeNames", {"n1", "n2"}}}).dump();
}

struct Case {
  std::string name;
  std::string fraction;  // what the pod asks
  bool synced;
  std::vector<std::string> arrived, unschedulable;
  bool refusal_recorded;
};

class FilterStepsTest : public ::testing::TestWithParam<Case> {};

TEST_P(FilterStepsTest, TellsTheHandleWhatTheDecisionCallsFor) {
  const Case& c = GetParam();
  // n1 and n2: one GPU each, three quarters of it held.
  ClusterModel model;
  for (const char* node : {"n1", "n2"}) {
    model.UpsertNode(node, testing::Node(node).Gpus(1).inventory(), absl::OkStatus());
    model.UpsertPod(testing::Holding(std::string("held-on-") + node, node, 0, 750));
  }
  RecordingHandle handle;
  handle.snapshot = model.Publish();
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n", "p.yaml", registry);
  ASSERT_TRUE(profile.ok()) << profile.status();
  handle.profiles = ProfileSet::Single(*profile);
  handle.synced = c.synced;
  MetricsRegistry metrics;
  const ExtenderService service(handle, metrics);

  ASSERT_TRUE(service.Filter(FilterBody(c.fraction)).ok());
  EXPECT_EQ(handle.arrived, c.arrived);
  EXPECT_EQ(handle.unschedulable, c.unschedulable);
  EXPECT_EQ(handle.refusal_log.size() == 0, !c.refusal_recorded);
  EXPECT_TRUE(handle.preempted.empty()) << "only the preempt verb tells of kube-scheduler's preemption";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FilterStepsTest,
    ::testing::Values(
        Case{"AFittingPodIsLearnedAndNothingElseIsTold", "0.25", true, {"p-uid"}, {}, false},
        Case{"APodThatFitsNowhereNowIsLearnedQueuedForPreemptionAndItsRefusalKept", "0.5", true, {"p-uid"},
             {"p-uid"}, true},
        Case{"AnInvalidRequestIsNeitherLearnedNorQueuedButItsRefusalIsKept", "1.5", true, {}, {}, true},
        Case{"WhileTheModelFillsNothingIsTold", "0.5", false, {}, {}, false}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera
