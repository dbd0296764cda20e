// The policy file's list kept as a floor under the learned mix
// (workloadLearning.priorPercent): the blend itself, the learner asking for
// it, and what it changes for fgd when the window holds one kind only.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/fgd/fgd.h"
#include "policies/fgd/host_stranding.h"
#include "scheduler/cache/workload_learner.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Node;
using testing::Pod;
using testing::WorkloadOf;

// Each kind's share of the whole, in parts per million, as "<item>: <ppm>".
std::vector<std::string> Shares(const TargetWorkload& w) {
  std::vector<std::string> out;
  for (const WorkloadPod& p : w.pods()) {
    WorkloadPod kind = p;
    kind.weight = 1;
    out.push_back(FormatWorkloadPod(kind).substr(2) + ": " +
                  std::to_string((p.weight * 1'000'000 + w.total_weight() / 2) / w.total_weight()));
  }
  return out;
}

TEST(BlendedWithTest, MixesThePriorInAtItsShare) {
  struct Case {
    std::string name;
    std::vector<std::string> learned;
    std::vector<std::string> prior;
    int64_t percent;
    std::vector<std::string> shares;
  };
  const std::vector<Case> cases = {
      {"none of the prior leaves the learned mix as it is", {"3 cpu=1 gpu=500m", "1 cpu=2"}, {"1 cpu=1 gpu=1"}, 0,
       {"cpu=1000m gpu=500m: 750000", "cpu=2000m: 250000"}},
      {"a tenth of the prior: its kinds share a tenth, the learned ones the rest by their counts",
       {"3 cpu=1 gpu=500m", "1 cpu=2"}, {"1 cpu=1 gpu=1", "1 cpu=1 gpu=250m"}, 10,
       {"cpu=1000m gpu=500m: 675000", "cpu=2000m: 225000", "cpu=1000m gpu=1: 50000", "cpu=1000m gpu=250m: 50000"}},
      {"a kind on both sides is one kind with both parts", {"1 cpu=1 gpu=500m"}, {"1 cpu=1 gpu=500m", "1 cpu=1 gpu=1"},
       10, {"cpu=1000m gpu=500m: 950000", "cpu=1000m gpu=1: 50000"}},
      {"all of the prior is the prior", {"1 cpu=1 gpu=500m"}, {"1 cpu=1 gpu=1", "3 cpu=1 gpu=250m"}, 100,
       {"cpu=1000m gpu=1: 250000", "cpu=1000m gpu=250m: 750000"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload blended = WorkloadOf(c.learned).BlendedWith(WorkloadOf(c.prior), c.percent);
    EXPECT_THAT(Shares(blended), ::testing::UnorderedElementsAreArray(c.shares));
    EXPECT_EQ(blended.prior_percent(), 0) << "a blend is not blended again";
  }
}

TEST(BlendedWithTest, KeepsWhatTheLearnedMixKnowsOfTheCluster) {
  const TargetWorkload learned = WorkloadOf({"1 cpu=1 gpu=500m"}).WithClusterCpu({.cpu = 96'000, .gpu = 8'000});
  const TargetWorkload blended = learned.BlendedWith(WorkloadOf({"1 cpu=1 gpu=1"}), 10);
  EXPECT_EQ(blended.cluster_cpu_per_gpu().cpu, 96'000);
  EXPECT_EQ(blended.cluster_cpu_per_gpu().gpu, 8'000);
}

TEST(MixLearnerTest, ALearnedMixAsksForThePriorShareTheSettingsSay) {
  for (int64_t percent : {0, 10, 35}) {
    WorkloadLearning settings;
    settings.window_pods = 100;
    settings.warmup_pods = 2;
    settings.publish_every_pods = 1;
    settings.prior_percent = percent;
    MixLearner learner(settings);
    learner.Add(*ParseWorkloadPod("1 cpu=1 gpu=500m"));
    learner.Add(*ParseWorkloadPod("1 cpu=1 gpu=500m"));
    std::shared_ptr<const TargetWorkload> mix = learner.DueMix();
    ASSERT_NE(mix, nullptr);
    EXPECT_EQ(mix->prior_percent(), percent);
    EXPECT_EQ(mix->pods().size(), 1u) << "the learned mix itself is the window's";
  }
}

// Only half-GPU pods have arrived lately; the policy file also expects
// whole-GPU pods. A half-GPU pod: beside another half (node a) or on an idle
// node (b)? By the learned mix alone the two are the same (every half still
// fits somewhere); with the file's list as a floor, pairing keeps b's GPUs
// whole for the whole-GPU pods the file expects.
TEST(LearnedPriorTest, AShareFillsAHalfUsedGpuRatherThanOpenAnIdleOneWhenThePriorExpectsWholeGpus) {
  const std::shared_ptr<const TargetWorkload> prior =
      std::make_shared<const TargetWorkload>(WorkloadOf({"1 cpu=1 gpu=500m", "1 cpu=1 gpu=1"}));
  const FgdPlugin file(prior, GpuShareArgs{}, MeasureArgs{});
  const Node half_used = Node("a").Gpus(2).Hold(0, 500);
  const Node idle = Node("b").Gpus(2);
  const CycleState pod(Pod().Fraction(500));
  auto score = [&](const Plugin& plugin, const Node& node) {
    const auto& fgd = dynamic_cast<const FgdPlugin&>(plugin);
    const NodeView view = node.View();
    const std::optional<GpuChoice> choice = fgd.ChooseGpus(pod, view);
    EXPECT_TRUE(choice.has_value());
    return choice.has_value() ? fgd.ScoreNode(pod, view, *choice) : -1;
  };
  for (int64_t percent : {0, 10}) {
    SCOPED_TRACE("prior percent " + std::to_string(percent));
    const std::shared_ptr<const TargetWorkload> halves =
        std::make_shared<const TargetWorkload>(WorkloadOf({"50 cpu=1 gpu=500m"}).WithPriorPercent(percent));
    const std::shared_ptr<const Plugin> learned = file.WithWorkload(halves);
    if (percent == 0) {
      EXPECT_EQ(score(*learned, half_used), score(*learned, idle));
    } else {
      EXPECT_GT(score(*learned, half_used), score(*learned, idle));
    }
  }
}

TEST(LearnedPriorTest, BothMeasuringPluginsCarryTheirOwnListIntoEveryLearnedMix) {
  const std::shared_ptr<const TargetWorkload> prior =
      std::make_shared<const TargetWorkload>(WorkloadOf({"1 cpu=1 gpu=1"}));
  const std::shared_ptr<const TargetWorkload> halves =
      std::make_shared<const TargetWorkload>(WorkloadOf({"1 cpu=1 gpu=500m"}).WithPriorPercent(10));
  const FgdPlugin fgd(prior, GpuShareArgs{}, MeasureArgs{});
  // Twice learned: the prior is still the file's list, not the first blend.
  const std::shared_ptr<const Plugin> once = fgd.WithWorkload(halves);
  const std::shared_ptr<const Plugin> twice = static_cast<const FgdPlugin&>(*once).WithWorkload(halves);
  EXPECT_THAT(Shares(static_cast<const FgdPlugin&>(*twice).workload()),
              ::testing::UnorderedElementsAre("cpu=1000m gpu=500m: 900000", "cpu=1000m gpu=1: 100000"));
  const HostStrandingPlugin stranding(prior, MeasureArgs{});
  const std::shared_ptr<const Plugin> learned = stranding.WithWorkload(halves);
  EXPECT_THAT(Shares(static_cast<const HostStrandingPlugin&>(*learned).workload()),
              ::testing::UnorderedElementsAre("cpu=1000m gpu=500m: 900000", "cpu=1000m gpu=1: 100000"));
}

}  // namespace
}  // namespace tessera
