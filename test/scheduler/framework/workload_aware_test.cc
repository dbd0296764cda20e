// Workload learning is a capability a plugin opts into (WorkloadAware): a
// profile rebuilds exactly the plugins that opted in, and only they report
// what they concluded of the cluster.
#include "scheduler/framework/workload_aware.h"

#include <memory>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/framework/profile.h"

namespace tessera {
namespace {

std::shared_ptr<const TargetWorkload> Mix(std::vector<std::string_view> kinds) {
  std::vector<WorkloadPod> pods;
  for (std::string_view k : kinds) pods.push_back(*ParseWorkloadPod(k));
  return std::make_shared<const TargetWorkload>(*TargetWorkload::Create(std::move(pods)));
}

class Chooser final : public Plugin, public GpuChooserPlugin {
 public:
  Chooser() : Plugin(/*memoizable=*/true) {}
  [[nodiscard]] std::string_view Name() const override { return "chooser"; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override {}
};

// Scores by the workload it measures against: the number of its kinds.
class MeasuringScorer final : public Plugin, public ScorePlugin, public WorkloadAware {
 public:
  explicit MeasuringScorer(std::shared_ptr<const TargetWorkload> workload)
      : Plugin(/*memoizable=*/true), workload_(std::move(workload)) {}
  [[nodiscard]] std::string_view Name() const override { return "measuring"; }
  [[nodiscard]] int64_t ScoreNode(const CycleState&, const NodeView&, const GpuChoice&) const override {
    return static_cast<int64_t>(workload_->pods().size());
  }
  [[nodiscard]] std::shared_ptr<const Plugin> WithWorkload(std::shared_ptr<const TargetWorkload> w) const override {
    return std::make_shared<const MeasuringScorer>(std::move(w));
  }
  [[nodiscard]] const TargetWorkload& MeasuredWorkload() const override { return *workload_; }

 private:
  std::shared_ptr<const TargetWorkload> workload_;
};

TEST(WorkloadAwareTest, OnlyAPluginThatOptsInIsWorkloadAware) {
  EXPECT_EQ(AsWorkloadAware(Chooser()), nullptr);
  const MeasuringScorer scorer(Mix({"1 cpu=1 gpu=1"}));
  EXPECT_EQ(AsWorkloadAware(scorer), &scorer);
}

TEST(WorkloadAwareTest, AProfileRebuildsTheAwarePluginsAndIsNullWithoutAny) {
  std::vector<WeightedPlugin> without = {{std::make_shared<const Chooser>(), 1}};
  const std::shared_ptr<const Profile> plain = *Profile::Create(std::move(without));
  EXPECT_EQ(plain->WithWorkload(Mix({"1 cpu=1 gpu=1"})), nullptr) << "nothing measures: no new profile";
  EXPECT_TRUE(plain->ClusterVerdicts().empty());

  std::vector<WeightedPlugin> with = {{std::make_shared<const Chooser>(), 1},
                                      {std::make_shared<const MeasuringScorer>(Mix({"1 cpu=1 gpu=1"})), 1}};
  const std::shared_ptr<const Profile> file = *Profile::Create(std::move(with));
  const std::shared_ptr<const TargetWorkload> learned = Mix({"1 cpu=1 gpu=1", "3 cpu=1 gpu=500m"});
  const std::shared_ptr<const Profile> next = file->WithWorkload(learned);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->PluginNames(), file->PluginNames());
  ASSERT_EQ(next->ClusterVerdicts().size(), 1u) << "one plugin measures: one verdict";
}

}  // namespace
}  // namespace tessera
