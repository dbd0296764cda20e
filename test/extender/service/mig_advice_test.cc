// A MIG pod that fits nowhere is seen waiting, per profile, with the GPU to
// re-partition: from the filter kube-scheduler sends to /debug and /metrics.
#include "extender/service/mig_advice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/policy_loader.h"
#include "extender/service/debug_state.h"
#include "extender/service/extender_service.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Inventory;

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
  - name: mig-partition
)";

// A filter request as kube-scheduler sends it, for a pod asking for `profile` on `nodes`.
std::string FilterBody(const std::string& name, const std::string& profile, const std::string& nodes) {
  return absl::StrCat(R"({"Pod":{"metadata":{"name":")", name, R"(","namespace":"ml","uid":"uid-)", name,
                      R"(","annotations":{"tessera.io/mig-profile":")", profile, R"("}},"spec":{}},)",
                      R"("Nodes":null,"NodeNames":[)", nodes, "]}");
}

class MigAdviceTest : public ::testing::Test {
 protected:
  MigAdviceTest() {
    // Node a: GPU 0 as seven 1g.10gb, two held; node b: shared GPUs only.
    NodeInventory a = Inventory(2);
    a.gpus[0].mig_mode = true;
    a.gpus[0].mig = testing::MigInstances("1g.10gb", {0, 1, 2, 3, 4, 5, 6});
    model_.UpsertNode("a", a, absl::OkStatus());
    model_.UpsertNode("b", Inventory(8), absl::OkStatus());
    model_.UpsertPod(testing::Holding("p0", "a", {testing::Share(0, 142, 10240).Mig("1g.10gb", 0)}));
    model_.UpsertPod(testing::Holding("p1", "a", {testing::Share(0, 142, 10240).Mig("1g.10gb", 1)}));
    snapshot_ = model_.Publish();
    profile_ = *LoadPolicyText(kPolicy, "policy.yaml", registry_);
    handle_.snapshot = [this] { return snapshot_; };
    handle_.profile = [this] { return profile_; };
    handle_.refusal_log = &refusals_;
    service_ = std::make_unique<ExtenderService>(handle_, metrics_);
  }

  ClusterModel model_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
  PluginRegistry registry_ = NewBuiltinRegistry();
  std::shared_ptr<const Profile> profile_;
  MetricsRegistry metrics_;
  RecentRefusals refusals_;
  testing::FunctionHandle handle_;
  std::unique_ptr<ExtenderService> service_;
};

TEST_F(MigAdviceTest, APodWaitingForAProfileGetsTheGpuToRepartitionAndAFittingOneIsNotListed) {
  ASSERT_TRUE(service_->Filter(FilterBody("big", "3g.40gb", R"("a","b")")).ok());
  ASSERT_TRUE(service_->Filter(FilterBody("small", "1g.10gb", R"("a","b")")).ok());

  const std::vector<MigWait> waits = MigWaits(refusals_.List(), *snapshot_);
  ASSERT_EQ(waits.size(), 1u) << "the 1g pod fits: only the 3g pod waits";
  EXPECT_EQ(waits[0].profile, "3g.40gb");
  EXPECT_EQ(waits[0].pods, (std::vector<std::string>{"ml/big"}));
  ASSERT_TRUE(waits[0].advice.has_value());
  // Slices 4-7: three free 1g instances destroyed, no pod evicted.
  EXPECT_EQ(waits[0].advice->node, "a");
  EXPECT_EQ(waits[0].advice->start, 4);
  EXPECT_EQ(waits[0].advice->destroy.size(), 3u);
  EXPECT_EQ(waits[0].advice->pods_to_evict, 0);

  DebugInputs inputs;
  inputs.snapshot = snapshot_.get();
  inputs.mig_waits = waits;
  const nlohmann::json debug = nlohmann::json::parse(RenderDebugState(inputs));
  const nlohmann::json& listed = debug["migWaiting"][0];
  EXPECT_EQ(listed["profile"], "3g.40gb");
  EXPECT_EQ(listed["repartition"]["node"], "a");
  EXPECT_EQ(listed["repartition"]["gpuUuid"], "GPU-0");
  EXPECT_EQ(listed["repartition"]["destroyFreeInstances"][0]["uuid"], "MIG-1g.10gb-4");
  EXPECT_EQ(listed["repartition"]["podsToEvict"], 0);
}

TEST_F(MigAdviceTest, TheGaugesCountWaitingPodsAndTheAdvicesDisruptionAndGoToZeroOnceNobodyWaits) {
  ASSERT_TRUE(service_->Filter(FilterBody("big-1", "3g.40gb", R"("a")")).ok());
  ASSERT_TRUE(service_->Filter(FilterBody("big-2", "3g.40gb", R"("a")")).ok());
  ASSERT_TRUE(service_->Filter(FilterBody("h100", "1g.20gb+me", R"("a")")).ok());
  MigAdviceGauges gauges(metrics_);
  gauges.Refresh(MigWaits(refusals_.List(), *snapshot_));
  std::string text = metrics_.Render();
  EXPECT_THAT(text, HasSubstr("\ntessera_mig_pods_waiting{profile=\"3g.40gb\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("\ntessera_mig_repartition_pods_to_evict{profile=\"3g.40gb\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("\ntessera_mig_repartition_pods_to_evict{profile=\"1g.20gb+me\"} -1\n"))
      << "no GPU here offers it";

  refusals_.Forget("uid-big-1");
  refusals_.Forget("uid-big-2");
  refusals_.Forget("uid-h100");
  gauges.Refresh(MigWaits(refusals_.List(), *snapshot_));
  text = metrics_.Render();
  EXPECT_THAT(text, HasSubstr("\ntessera_mig_pods_waiting{profile=\"3g.40gb\"} 0\n"));
}

}  // namespace
}  // namespace tessera
