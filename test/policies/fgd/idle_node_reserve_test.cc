// The idle-node reserve: kinds that take whole nodes short of idle nodes
// they fit (TargetWorkload::WithIdleNodes, idle_node_reserve), and
// host-stranding counting a broken idle node as their loss.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/fgd/fgd.h"
#include "policies/gpu_share/gpu_share.h"
#include "policies/fgd/host_stranding.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"
#include "test/testing/measure_args.h"

namespace tessera {
namespace {

using testing::Node;
using testing::Pod;
using IdleNodes = TargetWorkload::IdleNodes;

TargetWorkload Workload(const std::vector<std::string>& items) { return testing::WorkloadOf(items); }

TargetWorkload Told(const std::vector<std::string>& items, std::vector<IdleNodes> idle, int64_t free_milli) {
  return Workload(items).WithCluster(
      {.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = std::move(idle), .free_milli = free_milli});
}

TEST(IdleNodeReserveTest, AKindTakingWholeNodesIsReservedWhereItNeedsAQuarterOfTheIdleNodesItFits) {
  // D = 3 · 1000 + 1 · 8000 = 11000 asked, d = 8000 of it by the 8-GPU kind;
  // with 80 GPUs free it needs 8/11 · 80 000 milli-GPU: reserved while the
  // idle nodes it fits hold at most 4 times that, 232 727 (29 nodes of 8).
  const std::vector<std::string> mix = {"3 cpu=1 gpu=1", "1 cpu=8 gpu=8"};
  struct Case {
    std::string name;
    std::vector<std::string> workload;
    std::vector<IdleNodes> idle;
    int64_t free_milli;
    bool reserved;
  };
  const std::vector<Case> cases = {
      {"29 idle nodes it fits: reserved", mix, {{8, 96000, "G2", 29}}, 80000, true},
      {"30: it needs less than a quarter of them", mix, {{8, 96000, "G2", 30}}, 80000, false},
      {"30, but with 83 GPUs free it will need more", mix, {{8, 96000, "G2", 30}}, 83000, true},
      {"idle nodes short of its CPU do not count", mix, {{8, 96000, "G2", 20}, {8, 4000, "G2", 100}}, 80000, true},
      {"nor idle nodes of another GPU count", mix, {{8, 96000, "G2", 20}, {4, 96000, "G2", 100}}, 80000, true},
      {"alike nodes in several groups add up", mix, {{8, 96000, "G2", 15}, {8, 64000, "T4", 15}}, 80000, false},
      {"a kind naming models counts the idle nodes of those only",
       {"3 cpu=1 gpu=1", "1 cpu=8 gpu=8 models=G2"},
       {{8, 96000, "G2", 15}, {8, 64000, "T4", 15}},
       80000,
       true},
      {"nothing free: nothing more will come", mix, {{8, 96000, "G2", 1}}, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload w = Told(c.workload, c.idle, c.free_milli);
    ASSERT_EQ(w.whole_node_kinds().size(), 1u);
    EXPECT_EQ(w.whole_node_kinds()[0].reserved, c.reserved);
    EXPECT_EQ(w.idle_node_reserve(8, 96000, "G2"), c.reserved ? 8000 : 0);
  }
}

TEST(IdleNodeReserveTest, OnlyKindsAskingTwoOrMoreWholeGpusTakeWholeNodes) {
  const TargetWorkload w = Told({"1 cpu=1 gpu=1", "1 cpu=1 gpu=500m", "1 cpu=4", "1 cpu=2 gpu=2", "1 cpu=8 gpu=8"},
                                {{8, 96000, "G2", 1}, {2, 16000, "T4", 1}}, 8000);
  std::vector<int64_t> gpus;
  for (const TargetWorkload::WholeNodeKind& kind : w.whole_node_kinds()) gpus.push_back(kind.gpus);
  EXPECT_THAT(gpus, ::testing::ElementsAre(2, 8));
}

TEST(IdleNodeReserveTest, ANodeIsWorthItsGpusOnceWhereAReservedKindFitsIt) {
  const TargetWorkload w =
      Told({"1 cpu=1 gpu=1", "1 cpu=64 gpu=8", "1 cpu=88 gpu=8", "1 cpu=8 gpu=4"}, {{8, 96000, "G2", 1}}, 8000);
  struct Case {
    std::string name;
    int64_t gpus;
    int64_t cpu_free;
    std::string model;
    int64_t reserve;
  };
  const std::vector<Case> cases = {
      {"two reserved kinds fit: it holds one pod, 8 GPUs", 8, 96000, "G2", 8000},
      {"CPU for the smaller kind only", 8, 70000, "G2", 8000},
      {"CPU for neither", 8, 60000, "G2", 0},
      {"a 4-GPU node: the 4-GPU kind takes it whole, and has no idle node yet", 4, 96000, "G2", 4000},
      {"a 2-GPU node: no kind takes it whole", 2, 96000, "G2", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(w.idle_node_reserve(c.gpus, c.cpu_free, c.model), c.reserve);
  }
  EXPECT_EQ(Workload({"1 cpu=1 gpu=1", "1 cpu=64 gpu=8"}).idle_node_reserve(8, 96000, "G2"), 0)
      << "a policy file's list knows no idle nodes";
}

TEST(IdleNodeReserveTest, ItIsJudgedByArrivalsWhateverTheKindWeightsAndKeptThroughABlend) {
  // Weighed per GPU asked the 8-GPU kind weighs an eighth of its arrivals;
  // its need is still what the arrivals ask.
  const std::vector<IdleNodes> idle = {{8, 96000, "G2", 29}};
  const TargetWorkload learned = Told({"3 cpu=1 gpu=1", "1 cpu=8 gpu=8"}, idle, 80000);
  ASSERT_TRUE(learned.whole_node_kinds()[0].reserved);
  const std::shared_ptr<const TargetWorkload> weighed =
      Weighed(std::make_shared<const TargetWorkload>(learned), testing::Measure(KindWeights::kPerGpuAsked));
  EXPECT_EQ(weighed->cluster_idle_nodes(), idle);
  EXPECT_EQ(weighed->idle_node_reserve(8, 96000, "G2"), 8000);
  // Blended half and half with a list of one-GPU pods, the 8-GPU kind asks
  // 1000 of 1875: 4 · 1000/1875 · 80 000 < 29 · 8000.
  const TargetWorkload blended = learned.BlendedWith(Workload({"1 cpu=1 gpu=1"}), 50);
  EXPECT_EQ(blended.cluster_idle_nodes(), idle);
  EXPECT_EQ(blended.cluster_free_milli(), 80000);
  EXPECT_EQ(blended.idle_node_reserve(8, 96000, "G2"), 0);
}

TEST(ClusterVerdictTest, AMixToldTheClusterAnewKeepsItsVerdictUntilAReserveOpensOrCpuStartsBinding) {
  // As the first test's mix: with 80 GPUs free the 8-GPU kind is reserved
  // while it fits at most 29 idle nodes of 8.
  const std::vector<std::string> mix = {"3 cpu=1 gpu=1", "1 cpu=8 gpu=8"};
  const TargetWorkload learned = Told(mix, {{8, 96000, "G2", 40}}, 80000);
  const TargetWorkload::ClusterVerdict before = learned.cluster_verdict();
  ASSERT_THAT(before.reserved, ::testing::ElementsAre(false));
  struct Case {
    std::string name;
    TargetWorkload::ClusterSupply now;
    bool same;
  };
  const std::vector<Case> cases = {
      {"a bind later, fewer GPUs free and as many idle nodes", {{}, {}, {{8, 96000, "G2", 40}}, 79000}, true},
      {"ten nodes fewer, still more than it needs", {{}, {}, {{8, 96000, "G2", 30}}, 80000}, true},
      {"29 idle nodes: the reserve opens", {{}, {}, {{8, 96000, "G2", 29}}, 80000}, false},
      // 1 core per GPU asked (3 + 8 cores for 11 GPUs); the cluster has 0.5.
      {"CPU starts binding", {{.cpu = 500, .gpu = 1000}, {}, {{8, 96000, "G2", 40}}, 80000}, false},
      {"the models are known and none is scarce", {{}, {{"G2", 400}}, {{8, 96000, "G2", 40}}, 80000}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(learned.WithCluster(c.now).cluster_verdict() == before, c.same);
  }
}

TEST(ClusterVerdictTest, AProfileToldTheClusterAnewIsNewOnlyWhereAPluginsVerdictChanges) {
  // The learned mix has no whole-node kind; host-stranding's own list does,
  // and blends it in: the verdict that counts is the blended one.
  const std::vector<std::string> prior = {"3 cpu=1 gpu=1", "1 cpu=8 gpu=8"};
  std::vector<WeightedPlugin> plugins = {{std::make_shared<GpuSharePlugin>(GpuShareArgs{}), 1},
                                         {std::make_shared<HostStrandingPlugin>(Workload(prior)), 20}};
  absl::StatusOr<std::shared_ptr<const Profile>> created = Profile::Create(std::move(plugins));
  ASSERT_TRUE(created.ok()) << created.status();
  const Profile& file = **created;
  const auto told = [&](int64_t idle_nodes) {
    return std::make_shared<const TargetWorkload>(
        Workload({"3 cpu=1 gpu=1"})
            .WithCluster({.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = {{8, 96000, "G2", idle_nodes}},
                          .free_milli = 80000})
            .WithPriorPercent(50));
  };
  const std::shared_ptr<const Profile> in_force = file.WithWorkload(told(100));
  ASSERT_NE(in_force, nullptr);
  EXPECT_EQ(file.WithRetoldWorkload(told(90), *in_force), nullptr) << "plenty of idle nodes either way";
  const std::shared_ptr<const Profile> retold = file.WithRetoldWorkload(told(1), *in_force);
  ASSERT_NE(retold, nullptr) << "one idle node left: the 8-GPU kind's reserve opens";
  EXPECT_NE(retold->ClusterVerdicts(), in_force->ClusterVerdicts());
  EXPECT_EQ(file.WithRetoldWorkload(told(1), *retold), nullptr);
}

TEST(HostStrandingPluginTest, BreakingAnIdleNodeAReservedKindNeedsCostsAllItsGpus) {
  const std::vector<std::string> mix = {"3 cpu=1 gpu=1", "1 cpu=8 gpu=8"};
  const HostStrandingPlugin told(Told(mix, {{8, 96000, "G2", 2}}, 80000));
  const HostStrandingPlugin plenty(Told(mix, {{8, 96000, "G2", 100}}, 80000));
  const Node idle = Node("idle").Gpus(8, "G2", 0).Host(96000);
  const Node broken = Node("broken").Gpus(8, "G2", 0).Host(96000).Hold(7, 1000);
  GpuChoice gpu0;
  gpu0.gpu_indices.push_back(0);
  const CycleState one_gpu(Pod().Cpu(1000));
  // The reserve costs only on the idle node: the 8-GPU kind's 8000 more on
  // the 7000 fgd's measure counts it (F·W 0 → 7000 + 4 · 8000 at W = 4):
  // trunc(100 · σ(−9.75)) = 0. On a broken node there is nothing to keep.
  EXPECT_GT(plenty.ScoreNode(one_gpu, idle.View(), gpu0), 0);
  EXPECT_EQ(told.ScoreNode(one_gpu, idle.View(), gpu0), 0);
  EXPECT_EQ(told.ScoreNode(one_gpu, broken.View(), gpu0), plenty.ScoreNode(one_gpu, broken.View(), gpu0));
  // A CPU-only pod breaks it only where it leaves too little CPU.
  const CycleState little_cpu(Pod().Count(0).Cpu(80000));
  const CycleState much_cpu(Pod().Count(0).Cpu(90000));
  EXPECT_EQ(told.ScoreNode(little_cpu, idle.View(), GpuChoice{}),
            plenty.ScoreNode(little_cpu, idle.View(), GpuChoice{}));
  EXPECT_LT(told.ScoreNode(much_cpu, idle.View(), GpuChoice{}), plenty.ScoreNode(much_cpu, idle.View(), GpuChoice{}));
}

TEST(HostStrandingPluginTest, APodTakingAWholeNodeTakesTheOneNoKindAskingMoreCpuNeeds) {
  // Both 8-GPU kinds reserved (few idle nodes); the 88-core kind fits only
  // the node with 115 cores.
  const std::vector<std::string> mix = {"3 cpu=1 gpu=1", "1 cpu=64 gpu=8", "1 cpu=88 gpu=8"};
  const TargetWorkload w = Told(mix, {{8, 86400, "G2", 1}, {8, 115200, "G3", 1}}, 16000);
  EXPECT_EQ(w.reserved_kinds_fitting(8, 86400, "G2", /*asking_more_than=*/64000), 0);
  EXPECT_EQ(w.reserved_kinds_fitting(8, 115200, "G3", /*asking_more_than=*/64000), 1);
  EXPECT_EQ(w.reserved_kinds_fitting(8, 115200, "G3", /*asking_more_than=*/63000), 2);
  EXPECT_EQ(w.reserved_kinds_fitting(8, 115200, "G3", /*asking_more_than=*/88000), 0);
  const HostStrandingPlugin told(w);
  const Node small = Node("small").Gpus(8, "G2", 0).Host(86400, 86400);
  const Node large = Node("large").Gpus(8, "G3", 0).Host(115200, 115200);
  GpuChoice all;
  for (int32_t i = 0; i < 8; ++i) all.gpu_indices.push_back(i);
  const CycleState asks_64(Pod().Count(8).Cpu(64000));
  EXPECT_GT(told.ScoreNode(asks_64, small.View(), all), told.ScoreNode(asks_64, large.View(), all))
      << "the 88-core kind fits the large node alone";
  // A pod asking 63 cores keeps both kinds out of the large node, the
  // 64-core one alone out of the small: charged one GPU per kind, it ranks
  // them still (all of a node's GPUs each would score both 0).
  const CycleState asks_63(Pod().Count(8).Cpu(63000));
  EXPECT_GT(told.ScoreNode(asks_63, small.View(), all), told.ScoreNode(asks_63, large.View(), all));
  const CycleState asks_88(Pod().Count(8).Cpu(88000));
  EXPECT_GT(told.ScoreNode(asks_88, large.View(), all), 0) << "it is what the large node is kept for";
}

}  // namespace
}  // namespace tessera
