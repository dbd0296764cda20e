#include "scheduler/framework/profile_set.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

class Chooser final : public Plugin, public GpuChooserPlugin {
 public:
  Chooser() : Plugin(/*memoizable=*/true) {}
  std::string_view Name() const override { return "chooser"; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override {}
};

std::shared_ptr<const Profile> NewProfile() {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back(WeightedPlugin{std::make_unique<Chooser>(), 1});
  return *Profile::Create(std::move(plugins));
}

PoolPolicy Pool(std::string name, std::vector<std::string> task_types, bool exclusive = false) {
  return PoolPolicy{.name = std::move(name), .task_types = std::move(task_types), .exclusive = exclusive,
                    .profile = NewProfile()};
}

// gpu-training (exclusive) takes training and fine-tuning; gpu-inference
// (shared) takes inference; everything else gets the default profile.
std::shared_ptr<const ProfileSet> TwoPools() {
  return *ProfileSet::Create(NewProfile(), {Pool("gpu-training", {"training", "fine-tuning"}, /*exclusive=*/true),
                                            Pool("gpu-inference", {"inference"})});
}

TEST(ProfileSetTest, APodIsPlacedByItsTaskTypesPoolProfileAndTheOthersByTheDefault) {
  const auto set = TwoPools();
  EXPECT_EQ(PoolRoute(*set, "fine-tuning").profile(), set->pools()[0].profile);
  EXPECT_EQ(PoolRoute(*set, "inference").profile(), set->pools()[1].profile);
  EXPECT_EQ(PoolRoute(*set, "").profile(), set->default_profile());
  EXPECT_EQ(PoolRoute(*set, "batch").profile(), set->default_profile()) << "a task type no pool lists";
  EXPECT_TRUE(set->Contains(set->pools()[1].profile.get()));
  EXPECT_FALSE(set->Contains(NewProfile().get()));
}

struct AdmitCase {
  std::string name;
  std::string task_type;
  std::string node_pool;
  bool admitted;
  std::string reason_code;
  std::string message;
};

class PoolRouteAdmits : public ::testing::TestWithParam<AdmitCase> {};

TEST_P(PoolRouteAdmits, NodesByTheirPool) {
  const AdmitCase& c = GetParam();
  const auto set = TwoPools();
  PoolRoute route(*set, c.task_type);
  EXPECT_EQ(route.Admits(c.node_pool), c.admitted);
  const FilterVerdict* refusal = route.Refusal(c.node_pool);
  if (c.admitted) {
    EXPECT_EQ(refusal, nullptr);
    return;
  }
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->code, FilterCode::kUnschedulableUnresolvable) << "evicting pods moves no node into a pool";
  EXPECT_EQ(refusal->reason_code, c.reason_code);
  EXPECT_EQ(refusal->message, c.message);
  EXPECT_EQ(route.Refusal(c.node_pool), refusal) << "one verdict per pool, built once";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PoolRouteAdmits,
    ::testing::Values(
        AdmitCase{"ATrainingPodInItsPool", "training", "gpu-training", true, "", ""},
        AdmitCase{"ATrainingPodInAnotherPool", "training", "gpu-inference", false, "node_pool_mismatch",
                  "pods of task type training run only in node pool gpu-training; this node is in node pool "
                  "gpu-inference"},
        AdmitCase{"ATrainingPodOnANodeOfNoPool", "training", "", false, "node_pool_mismatch",
                  "pods of task type training run only in node pool gpu-training; this node is in no node "
                  "pool"},
        AdmitCase{"AnInferencePodInItsSharedPool", "inference", "gpu-inference", true, "", ""},
        AdmitCase{"APodOfNoTaskTypeInAnExclusivePool", "", "gpu-training", false, "node_pool_reserved",
                  "node pool gpu-training is reserved for task types training, fine-tuning; pod has no task type"},
        AdmitCase{"APodOfAnUnlistedTaskTypeInAnExclusivePool", "batch", "gpu-training", false, "node_pool_reserved",
                  "node pool gpu-training is reserved for task types training, fine-tuning; pod's task type is "
                  "batch"},
        AdmitCase{"APodOfNoTaskTypeInASharedPool", "", "gpu-inference", true, "", ""},
        AdmitCase{"APodOfNoTaskTypeInAPoolThePolicyDoesNotName", "", "cpu", true, "", ""},
        AdmitCase{"APodOfNoTaskTypeOnANodeOfNoPool", "", "", true, "", ""}),
    [](const ::testing::TestParamInfo<AdmitCase>& info) { return info.param.name; });

TEST(ProfileSetTest, WithoutExclusivePoolsAnUnroutedPodNeedsNoNodesPool) {
  const auto set = *ProfileSet::Create(NewProfile(), {Pool("gpu-inference", {"inference"})});
  EXPECT_FALSE(PoolRoute(*set, "").restricts_nodes());
  EXPECT_TRUE(PoolRoute(*set, "inference").restricts_nodes());
  EXPECT_FALSE(PoolRoute(*ProfileSet::Single(NewProfile()), "inference").restricts_nodes())
      << "a policy without pools routes nothing, whatever the pod's label says";
}

TEST(ProfileSetTest, CreateRefusesWhatTheLoaderRefuses) {
  EXPECT_THAT(std::string(ProfileSet::Create(NewProfile(), {Pool("a", {"x"}), Pool("a", {"y"})}).status().message()),
              HasSubstr("pool \"a\" is listed twice"));
  EXPECT_THAT(std::string(ProfileSet::Create(NewProfile(), {Pool("a", {"x"}), Pool("b", {"y", "x"})}).status().message()),
              HasSubstr("task type \"x\" goes to two pools: \"a\" and \"b\""));
  EXPECT_THAT(std::string(ProfileSet::Create(NewProfile(), {Pool("a", {})}).status().message()),
              HasSubstr("takes no task type"));
  EXPECT_FALSE(ProfileSet::Create(nullptr, {}).ok());
}

}  // namespace
}  // namespace tessera
