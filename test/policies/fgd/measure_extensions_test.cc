// What fgd and host-stranding measure beyond the paper: kinds weighed per
// GPU they ask (kindWeights: gpus) and shared GPUs judged by their free
// memory (gpuMemory: fit).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/fgd/fgd.h"
#include "policies/fgd/fragmentation.h"
#include "policies/fgd/host_stranding.h"
#include "scheduler/framework/plugin_args.h"
#include "test/testing/builders.h"
#include "test/testing/measure_args.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

std::vector<WorkloadPod> Kinds(const std::vector<std::string>& items) {
  std::vector<WorkloadPod> pods;
  for (const std::string& item : items) {
    absl::StatusOr<WorkloadPod> pod = ParseWorkloadPod(item);
    EXPECT_TRUE(pod.ok()) << item << ": " << pod.status();
    if (pod.ok()) pods.push_back(*pod);
  }
  return pods;
}

std::vector<int64_t> WeightsOf(const TargetWorkload& w) {
  std::vector<int64_t> weights;
  for (const WorkloadPod& p : w.pods()) weights.push_back(p.weight);
  return weights;
}

TEST(KindWeightsTest, PerGpuAskedDividesEachKindsArrivalsByTheGpuItAsks) {
  struct Case {
    std::string name;
    std::vector<std::string> items;
    std::vector<int64_t> weights;
  };
  // The scale is 64000 milli-GPU: weight · 64000 / (GPUs · share).
  const std::vector<Case> cases = {
      {"a half-GPU kind weighs twice a whole-GPU kind of the same arrivals",
       {"1 cpu=1000m gpu=500m", "1 cpu=1000m gpu=1"}, {128, 64}},
      {"an 8-GPU kind weighs an eighth of a whole-GPU kind", {"8 cpu=1000m gpu=8", "1 cpu=1000m gpu=1"}, {64, 64}},
      {"GPUs of a share count as their sum", {"3 cpu=1000m gpu=2x250m"}, {384}},
      {"a CPU-only kind counts as ten GPUs", {"30 cpu=4000m", "3 cpu=4000m gpu=1"}, {192, 192}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::StatusOr<TargetWorkload> w = TargetWorkload::Create(Kinds(c.items), KindWeights::kPerGpuAsked);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(WeightsOf(*w), c.weights);
    EXPECT_EQ(WeightsOf(*TargetWorkload::Create(Kinds(c.items), KindWeights::kPerPod)),
              WeightsOf(*TargetWorkload::Create(Kinds(c.items))))
        << "per pod is the arrivals as they are";
  }
}

TEST(KindWeightsTest, WeightsThatWouldPassTheBoundAreScaledDownTogetherAndNoneFallsToZero) {
  // 10^9 arrivals of a 10-milli share would weigh 6.4 · 10^15.
  const absl::StatusOr<TargetWorkload> w = TargetWorkload::Create(
      Kinds({"1000000000 cpu=1 gpu=10m", "100 cpu=1 gpu=10m", "1 cpu=1 gpu=8"}), KindWeights::kPerGpuAsked);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_LE(w->total_weight(), TargetWorkload::kMaxTotalWeight);
  const std::vector<int64_t> weights = WeightsOf(*w);
  EXPECT_GT(weights[0], weights[1]);
  EXPECT_GE(weights[1], 1);
  EXPECT_EQ(weights[2], 1) << "rounded down to nothing, kept at 1";
}

TEST(KindWeightsTest, WeighingKeepsWhatTheArrivalsAskAndWhatTheClusterHas) {
  const std::vector<WorkloadPod> kinds = Kinds({"30 cpu=4000m", "3 cpu=12000m gpu=1", "6 cpu=2000m gpu=500m"});
  const absl::StatusOr<TargetWorkload> arrivals = TargetWorkload::Create(kinds);
  ASSERT_TRUE(arrivals.ok()) << arrivals.status();
  const TargetWorkload::CpuPerGpu demand = arrivals->demand_cpu_per_gpu();
  EXPECT_EQ(demand.cpu, 30 * 4000 + 3 * 12000 + 6 * 2000);
  EXPECT_EQ(demand.gpu, 3 * 1000 + 6 * 500);
  const absl::StatusOr<TargetWorkload> weighed = TargetWorkload::Create(kinds, KindWeights::kPerGpuAsked);
  ASSERT_TRUE(weighed.ok()) << weighed.status();
  EXPECT_EQ(weighed->demand_cpu_per_gpu().cpu, demand.cpu) << "by arrivals, not by the weighed weights";
  EXPECT_EQ(weighed->demand_cpu_per_gpu().gpu, demand.gpu);
  // fgd and host-stranding weigh a learned mix as they take it; the cluster it was published with stays.
  const auto known = std::make_shared<const TargetWorkload>(arrivals->WithClusterCpu({.cpu = 64000, .gpu = 8000}));
  ASSERT_TRUE(known->cpu_short()) << "8 cores per GPU against the arrivals' 28";
  const std::shared_ptr<const TargetWorkload> taken =
      Weighed(known, testing::Measure(KindWeights::kPerGpuAsked));
  EXPECT_NE(WeightsOf(*taken), WeightsOf(*known)) << "weighed";
  EXPECT_EQ(taken->cluster_cpu_per_gpu().cpu, 64000);
  EXPECT_EQ(taken->cluster_cpu_per_gpu().gpu, 8000);
  EXPECT_TRUE(taken->cpu_short());
}

TEST(MemoryRatioTest, TheWorkloadsSharesTellTheMemoryEachMilliGpuAsks) {
  struct Case {
    std::string name;
    std::vector<std::string> items;
    TargetWorkload::MemoryPerMilli ratio;
  };
  const std::vector<Case> cases = {
      {"no kind asks memory", {"3 cpu=1 gpu=500m", "1 cpu=1 gpu=1"}, {0, 0}},
      {"the shares that ask memory, weighted",
       {"3 cpu=1 gpu=500m gpumem=12Gi", "1 cpu=1 gpu=250m gpumem=2Gi"}, {3 * 12288 + 2048, 3 * 500 + 250}},
      {"shares that ask none do not dilute it", {"1 cpu=1 gpu=500m gpumem=8Gi", "5 cpu=1 gpu=500m"}, {8192, 500}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload::MemoryPerMilli ratio = TargetWorkload::Create(Kinds(c.items))->memory_per_milli();
    EXPECT_EQ(ratio.memory, c.ratio.memory);
    EXPECT_EQ(ratio.milli, c.ratio.milli);
  }
}

TEST(FitMilliTest, ASharedGpuIsJudgedByWhatItsFreeMemoryIsWorth) {
  // 24 MiB per milli-GPU (a whole GPU's work asks 24000 MiB).
  const TargetWorkload::MemoryPerMilli ratio{.memory = 24000, .milli = 1000};
  struct Case {
    std::string name;
    Node node;
    int64_t milli = 0;
    int64_t memory = 0;
    int64_t fit;
  };
  const std::vector<Case> cases = {
      {"an idle card fits what it fits, memory or not", Node("n").Gpus(1, "T4", 16000), 0, 0, 1000},
      {"a shared card with memory to spare: its free milli-GPU",
       Node("n").Gpus(1, "A100", 81920).Hold(0, 500, 12000), 0, 0, 500},
      {"a shared card whose memory is short: what the memory is worth",
       Node("n").Gpus(1, "T4", 16000).Hold(0, 300, 12000), 0, 0, 166},
      {"a large card a memory-hungry pod shares: what the memory left is worth",
       Node("n").Gpus(1, "A100", 81920).Hold(0, 100, 71680), 0, 0, 426},
      {"once a pod takes its share and memory", Node("n").Gpus(1, "T4", 16000).Hold(0, 300, 4000), 200, 4800, 300},
      {"memory unknown: its free milli-GPU", Node("n").Gpus(1, "G2", 0).Hold(0, 300, 0), 0, 0, 700},
      {"more memory held than the card has: nothing", Node("n").Gpus(1, "T4", 16000).Hold(0, 300, 17000), 0, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeView view = c.node.View();
    EXPECT_EQ(FitMilli(view.gpu_states[0], c.milli, MemoryMiB(c.memory), ratio), c.fit);
  }
  const Node shared = Node("n").Gpus(1, "T4", 16000).Hold(0, 300, 12000);
  EXPECT_EQ(FitMilli(shared.View().gpu_states[0], 0, MemoryMiB(0), {}), 700) << "no ratio: its free milli-GPU";
}

TEST(MemoryRatioTest, AWorkloadThatKnowsNoMemoryTakesThePodsOwn) {
  const TargetWorkload silent = *TargetWorkload::Create(Kinds({"1 cpu=1 gpu=500m"}));
  const TargetWorkload told = *TargetWorkload::Create(Kinds({"1 cpu=1 gpu=500m gpumem=12Gi"}));
  const FragmentationOptions on{.host_stranding = false, .gpu_memory = true};
  const PodGpuRequest pod = Pod().Fraction(250).Memory(4000);
  EXPECT_EQ(MemoryRatio(silent, on, pod).memory, 4000);
  EXPECT_EQ(MemoryRatio(silent, on, pod).milli, 250);
  EXPECT_EQ(MemoryRatio(told, on, pod).memory, 12288) << "the workload's, once it knows";
  EXPECT_EQ(MemoryRatio(told, FragmentationOptions{}, pod).memory, 0) << "off: none";
  EXPECT_EQ(MemoryRatio(silent, on, Pod().Count(1)).memory, 0) << "a whole GPU tells nothing of shares";
  // Σ w·x past 2^30: both halved together, the ratio kept to within 2^-30.
  const TargetWorkload heavy = *TargetWorkload::Create(Kinds({"1000000000 cpu=1 gpu=500m gpumem=12000Mi"}));
  const TargetWorkload::MemoryPerMilli halved = MemoryRatio(heavy, on, pod);
  EXPECT_LE(halved.memory, int64_t{1} << 30);
  EXPECT_LE(halved.milli, int64_t{1} << 30);
  EXPECT_NEAR(static_cast<double>(halved.memory) / static_cast<double>(halved.milli), 24.0, 1e-6)
      << "24 MiB per milli-GPU, as the workload asks";
}

// Two 16000 MiB cards. GPU 0: 700 milli-GPU free but 5000 MiB; GPU 1: 500
// free and 12000 MiB. Kinds: half-GPU pods asking 12000 MiB, and twice as
// many 200-milli pods asking 4800 (24 MiB per milli-GPU).
//
// A 200-milli pod asking 4800 MiB: the paper's measure puts it on GPU 0
// (700 → 500 still takes a half-GPU pod) and counts nothing lost. Judged by
// memory, GPU 0 keeps 200 MiB after it, worth nothing: on GPU 0 the pod
// strands both GPUs' remainders for the half kind and GPU 0's for the small
// one (F·W 500 + 2 · 500); on GPU 1 it leaves 300 and 7200 MiB, which
// the small kind can still use (F·W 1000 + 0).
TEST(GpuMemoryFitTest, AShareGoesWhereTheMemoryLeftCanStillBeUsed) {
  const std::vector<std::string> items = {"1 cpu=1000m gpu=500m gpumem=12000Mi", "2 cpu=1000m gpu=200m gpumem=4800Mi"};
  const TargetWorkload w = *TargetWorkload::Create(Kinds(items));
  const Node node = Node("n").Gpus(2, "T4", 16000).Hold(0, 300, 11000).Hold(1, 500, 4000).Host(8000, 8000, 1 << 20);
  const NodeView view = node.View();
  const PodGpuRequest pod = Pod().Fraction(200).Memory(4800).Cpu(1000);
  const FgdPlugin paper(w);
  const FgdPlugin judged(w, GpuShareArgs{}, testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/true));
  ASSERT_TRUE(paper.ChooseGpus(CycleState(pod), view).has_value());
  EXPECT_EQ(paper.ChooseGpus(CycleState(pod), view)->gpu_indices[0], 0);
  const std::optional<GpuChoice> choice = judged.ChooseGpus(CycleState(pod), view);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->gpu_indices[0], 1);
  EXPECT_EQ(*choice->chooser_score, judged.ScoreNode(CycleState(pod), view, *choice)) << "the score it carries is Score's";
  // Host stranding judges the same way.
  const HostStrandingPlugin stranding(w, testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/true));
  GpuChoice on_0, on_1;
  on_0.gpu_indices.push_back(0);
  on_1.gpu_indices.push_back(1);
  EXPECT_GT(stranding.ScoreNode(CycleState(pod), view, on_1), stranding.ScoreNode(CycleState(pod), view, on_0));
}

TEST(MeasureArgsTest, BothPluginsReadTheExtensionsAndRefuseOtherValues) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {"the paper's by default", "workload: [\"1 cpu=1 gpu=1\"]\n", ""},
      {"both extensions", "workload: [\"1 cpu=1 gpu=1\"]\nkindWeights: gpus\ngpuMemory: fit\n", ""},
      {"an unknown weighing", "workload: [\"1 cpu=1 gpu=1\"]\nkindWeights: memory\n", "args.kindWeights"},
      {"an unknown memory rule", "workload: [\"1 cpu=1 gpu=1\"]\ngpuMemory: yes\n", "args.gpuMemory"},
      {"CPU-only kinds weighed as one GPU", "workload: [\"1 cpu=1 gpu=1\"]\nkindWeights: gpus\ncpuOnlyAsksGpus: 1\n", ""},
      {"CPU-only kinds weighed as no GPU", "workload: [\"1 cpu=1 gpu=1\"]\ncpuOnlyAsksGpus: 0\n",
       "args.cpuOnlyAsksGpus: must be an integer in 1..64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (const auto make : {&FgdPlugin::New, &HostStrandingPlugin::New}) {
      absl::StatusOr<PluginArgs> args = PluginArgs::FromText(c.yaml);
      ASSERT_TRUE(args.ok());
      const absl::StatusOr<std::unique_ptr<Plugin>> plugin = make(*args);
      if (c.error.empty()) {
        EXPECT_TRUE(plugin.ok()) << plugin.status();
      } else {
        EXPECT_THAT(plugin.status().message(), HasSubstr(c.error));
      }
    }
  }
}

TEST(MeasureArgsTest, ByGpusACpuOnlyKindWeighsAsTheGpusCpuOnlyAsksGpusSays) {
  const auto known = std::make_shared<const TargetWorkload>(*TargetWorkload::Create(Kinds({"1 cpu=1 gpu=1", "1 cpu=1"})));
  MeasureArgs measure = testing::Measure(KindWeights::kPerGpuAsked);
  EXPECT_EQ(WeightsOf(*Weighed(known, measure)), (std::vector<int64_t>{64, 6})) << "by default as 10 GPUs";
  measure.cpu_only_asks = MilliGpu(1000);
  EXPECT_EQ(WeightsOf(*Weighed(known, measure)), (std::vector<int64_t>{64, 64}));
}

TEST(MeasureArgsTest, ALearnedWorkloadIsWeighedAsTheFilesWas) {
  const TargetWorkload prior = *TargetWorkload::Create(Kinds({"1 cpu=1 gpu=1"}));
  const FgdPlugin fgd(prior, GpuShareArgs{}, testing::Measure(KindWeights::kPerGpuAsked));
  const auto learned =
      std::make_shared<const TargetWorkload>(*TargetWorkload::Create(Kinds({"1 cpu=1 gpu=500m", "1 cpu=1 gpu=1"})));
  const std::shared_ptr<const Plugin> next = fgd.WithWorkload(learned);
  const auto* typed = dynamic_cast<const FgdPlugin*>(next.get());
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(WeightsOf(typed->workload()), (std::vector<int64_t>{128, 64}));
}

}  // namespace
}  // namespace tessera
