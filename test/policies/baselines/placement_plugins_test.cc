// The FGD paper's baselines as Tessera plugins: each score as the paper's
// code computes it, on nodes small enough to check by hand.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/baselines/best_fit.h"
#include "policies/baselines/dot_product.h"
#include "policies/baselines/gpu_clustering.h"
#include "policies/baselines/gpu_fit.h"
#include "policies/baselines/gpu_packing.h"
#include "policies/baselines/host_resources_fit.h"
#include "policies/baselines/random_score.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Node;
using testing::Pod;

struct ScoreCase {
  std::string name;
  Node node;
  PodGpuRequest pod;
  int64_t score;
};

void ExpectScores(const ScorePlugin& plugin, const std::vector<ScoreCase>& cases) {
  for (const ScoreCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(plugin.ScoreNode(CycleState(c.pod), c.node.View(), GpuChoice{}), c.score);
  }
}

TEST(DotProductTest, ScoresOneMinusHalfTheAlignmentOfFreeAndAsked) {
  ExpectScores(DotProductPlugin(), {
      // [96000/128000, 8000/8000] · [8000/128000, 1000/8000] / 2 = 0.0859375
      {"an idle 8-GPU node", Node("n").Gpus(8).Host(96000), Pod().Cpu(8000), 91},
      {"a nearly full node aligns less and wins",
       Node("n").Gpus(8).Hold(0, 1000).Hold(1, 1000).Hold(2, 1000).Hold(3, 1000).Hold(4, 1000).Hold(5, 1000).Hold(6, 1000)
           .Host(10000),
       Pod().Cpu(8000), 98},
      {"unknown host resources drop the CPU term", Node("n").Gpus(8), Pod().Cpu(8000), 93},
  });
}

TEST(BestFitTest, ScoresWhatThePodLeavesFreeThenStretchesToTheFullRange) {
  const BestFitPlugin plugin;
  ExpectScores(plugin, {
      // 1 − (0.5 · 88000/128000 + 0.5 · 7000/8000) = 0.21875
      {"an idle 8-GPU node", Node("n").Gpus(8).Host(96000), Pod().Cpu(8000), 21},
      {"a node the pod nearly fills",
       Node("n").Gpus(8).Hold(0, 1000).Hold(1, 1000).Hold(2, 1000).Hold(3, 1000).Hold(4, 1000).Hold(5, 1000).Hold(6, 1000)
           .Host(10000),
       Pod().Cpu(8000), 99},
  });
  std::vector<int64_t> scores = {21, 99, 60};
  plugin.NormalizeScores(absl::MakeSpan(scores));
  EXPECT_THAT(scores, ::testing::ElementsAre(0, 100, 50));
  std::vector<int64_t> equal = {40, 40};
  plugin.NormalizeScores(absl::MakeSpan(equal));
  EXPECT_THAT(equal, ::testing::ElementsAre(0, 0));
}

TEST(GpuPackingTest, SharedGpusFirstThenIdleGpusOfUsedNodesThenSmallEmptyNodes) {
  ExpectScores(GpuPackingPlugin(), {
      {"a share on a half-used GPU: 100 − 50/10", Node("n").Gpus(4).Hold(0, 500).Host(96000), Pod().Fraction(250), 95},
      {"a share next to a GPU too full for it takes an idle one: 50 − 1",
       Node("n").Gpus(2).Hold(0, 900).Host(96000), Pod().Fraction(250), 49},
      {"two whole GPUs on a used node: 50 − 2", Node("n").Gpus(4).Hold(0, 500).Host(96000), Pod().Count(2), 48},
      {"an empty 1-GPU node: 33 − 1", Node("n").Gpus(1).Host(96000), Pod().Fraction(250), 32},
      {"an empty 8-GPU node: 33 − 8", Node("n").Gpus(8).Host(96000), Pod().Fraction(250), 25},
      {"a pod that asks for no GPU", Node("n").Gpus(2).Host(96000), Pod().Count(0).Cpu(1000), 0},
  });
}

TEST(GpuClusteringTest, PrefersNodesHoldingOnlyPodsOfTheSameShape) {
  ExpectScores(GpuClusteringPlugin(), {
      {"an empty node", Node("n").Gpus(8).Host(96000), Pod().Fraction(500), 25},
      {"a node of shares only, for a share: 25·500/8000 + 75",
       Node("n").Gpus(8).Hold(0, 500).Host(96000).PodShape(1, false), Pod().Fraction(500), 76},
      {"a node of shares and whole GPUs, for a share",
       Node("n").Gpus(8).Hold(0, 500).Hold(1, 1000).Host(96000).PodShape(1, false).PodShape(1, true),
       Pod().Fraction(500), 54},
      {"a node of whole GPUs only, for a share", Node("n").Gpus(8).Hold(1, 1000).Host(96000).PodShape(1, true),
       Pod().Fraction(500), 3},
      {"a 2-GPU pod is another shape than a 1-GPU pod", Node("n").Gpus(8).Hold(1, 1000).Host(96000).PodShape(1, true),
       Pod().Count(2), 3},
      {"a pod that asks for no GPU", Node("n").Gpus(8).Host(96000), Pod().Count(0).Cpu(1000), 0},
  });
}

TEST(RandomScoreTest, OneFittingNodeGetsTheFullScoreAndEachIsEquallyLikely) {
  const RandomScorePlugin plugin(0);
  std::vector<Node> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(Node(absl::StrCat("n", i)).Gpus(1).Host(1000));
  std::vector<int> wins(nodes.size(), 0);
  for (uint64_t salt = 1; salt <= 8000; ++salt) {
    PodGpuRequest pod = Pod();
    pod.salt = salt;
    std::vector<int64_t> scores;
    for (const Node& n : nodes) scores.push_back(plugin.ScoreNode(CycleState(pod), n.View(), GpuChoice{}));
    plugin.NormalizeScores(absl::MakeSpan(scores));
    ASSERT_EQ(std::count(scores.begin(), scores.end(), kMaxPluginScore), 1);
    ASSERT_EQ(std::count(scores.begin(), scores.end(), 0), 7);
    ++wins[static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin())];
  }
  for (int w : wins) EXPECT_NEAR(w, 1000, 150);
  PodGpuRequest pod = Pod();
  pod.salt = 5;
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), nodes[0].View(), GpuChoice{}),
            plugin.ScoreNode(CycleState(pod), nodes[0].View(), GpuChoice{}))
      << "the same pod on the same node draws the same key";
}

TEST(GpuFitTest, BestTakesTheTightestGpuAndRandomAnyGpuThatFits) {
  const Node node = Node("n").Gpus(4).Hold(0, 900).Hold(1, 300).Hold(2, 600).Host(96000);
  const GpuFitPlugin best(GpuSelection::kBest), random(GpuSelection::kRandom);
  EXPECT_EQ(best.ChooseGpus(CycleState(Pod().Fraction(300)), node.View())->gpu_indices[0], 2);
  std::set<int32_t> seen;
  for (uint64_t salt = 1; salt <= 200; ++salt) {
    PodGpuRequest pod = Pod().Fraction(300);
    pod.salt = salt;
    std::optional<GpuChoice> choice = random.ChooseGpus(CycleState(pod), node.View());
    ASSERT_TRUE(choice.has_value());
    seen.insert(choice->gpu_indices[0]);
  }
  EXPECT_EQ(seen, (std::set<int32_t>{1, 2, 3})) << "GPU 0 has only 100 free";
  EXPECT_EQ(random.ChooseGpus(CycleState(Pod()), node.View())->gpu_indices, (absl::InlinedVector<int32_t, 8>{3}))
      << "a whole GPU is the idle one";
  EXPECT_FALSE(random.ChooseGpus(CycleState(Pod().Count(2)), node.View()).has_value()) << "only one GPU is idle";
}

TEST(GpuFitTest, APodThatAsksForNoGpuFitsEverywhereAndGetsNone) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuFitPlugin>(GpuSelection::kBest), 1});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node full = Node("n").Gpus(1).Hold(0, 1000).Host(96000);
  const CycleState cpu_only(Pod().Count(0).Cpu(1000));
  EXPECT_TRUE((*profile)->Filter(cpu_only, full.View()).ok());
  std::optional<GpuChoice> choice = (*profile)->ChooseGpus(cpu_only, full.View());
  ASSERT_TRUE(choice.has_value());
  EXPECT_TRUE(choice->gpu_indices.empty());
  EXPECT_TRUE((*profile)->SharesFor(cpu_only, full.View(), *choice).empty());
  EXPECT_FALSE((*profile)->Filter(CycleState(Pod().Fraction(100)), full.View()).ok());
}

TEST(HostResourcesFitTest, ChecksCpuAndMemoryOnlyWhereTheyAreKnown) {
  const HostResourcesFitPlugin plugin;
  Node node = Node("n").Gpus(1).Host(4000, 8000);
  PodGpuRequest big = Pod().Count(0).Cpu(6000);
  FilterVerdict v = plugin.FilterNode(CycleState(big), node.View());
  EXPECT_EQ(v.code, FilterCode::kUnschedulable);
  EXPECT_EQ(v.message, "node has 4000 milli-CPU free, pod needs 6000");
  v = plugin.FilterNode(CycleState(Pod().Count(0).Cpu(9000)), node.View());
  EXPECT_EQ(v.code, FilterCode::kUnschedulableUnresolvable);
  EXPECT_EQ(v.reason_code, "cpu_too_small");
  PodGpuRequest memory = Pod().Count(0).Cpu(1000);
  memory.host.memory = MemoryMiB(400000);
  EXPECT_EQ(plugin.FilterNode(CycleState(memory), node.View()).reason_code, "memory_too_small");
  EXPECT_TRUE(plugin.FilterNode(CycleState(Pod().Count(0).Cpu(4000)), node.View()).ok());
  EXPECT_TRUE(plugin.FilterNode(CycleState(Pod().Count(0).Cpu(9000)), node.UnknownHost().View()).ok())
      << "unknown host: kube-scheduler checks it";
}

TEST(PlacementPluginsTest, FactoriesRefuseUnknownArgs) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("gpuSelection: worst\n");
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(GpuFitPlugin::New(*args).status().message(),
            "args.yaml:1:15: args.gpuSelection: must be one of best, random; got \"worst\"");
  absl::StatusOr<PluginArgs> extra = PluginArgs::FromText("weight: 3\n");
  ASSERT_TRUE(extra.ok());
  EXPECT_FALSE(BestFitPlugin::New(*extra).ok());
}

}  // namespace
}  // namespace tessera
