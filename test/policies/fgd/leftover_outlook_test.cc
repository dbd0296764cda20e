// fgd's `leftover: outlook`: a share also counts how much it lowers its
// GPU's expected final waste (policies/fgd/expected_waste.h).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/fgd/expected_waste.h"
#include "policies/fgd/fgd.h"
#include "policies/fgd/host_stranding.h"
#include "scheduler/framework/plugin_args.h"
#include "test/testing/builders.h"
#include "test/testing/measure_args.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

TargetWorkload Workload(const std::vector<std::string>& items) { return testing::WorkloadOf(items); }

TEST(ExpectedWasteTest, FollowsTheGpuUntilNoKindFits) {
  struct Case {
    std::string name;
    std::vector<std::string> workload;
    int64_t free;
    int64_t expected;  // W(free) · kScale
  };
  const std::vector<Case> cases = {
      {"a GPU no kind fits keeps all it has", {"1 cpu=1 gpu=500m"}, 300, 300'000},
      {"one kind fills what it can and leaves the rest", {"1 cpu=1 gpu=500m"}, 700, 200'000},
      {"two halves fill an idle GPU", {"1 cpu=1 gpu=500m"}, 1000, 0},
      {"the kinds that fit are averaged by arrivals: 320 leaves 30, 230 leaves 120",
       {"1 cpu=1 gpu=650m", "1 cpu=1 gpu=320m", "1 cpu=1 gpu=230m"}, 350, 75'000},
      {"a kind twice as frequent counts twice", {"2 cpu=1 gpu=320m", "1 cpu=1 gpu=230m"}, 350, 60'000},
      {"an idle GPU expects whole-GPU pods too", {"2 cpu=1 gpu=1", "1 cpu=1 gpu=810m"}, 1000, 63'333},
      {"a kind of several GPUs is no kind of it: one GPU's walk cannot see them free at once",
       {"1 cpu=1 gpu=2", "1 cpu=1 gpu=810m"}, 1000, 190'000},
      {"a pod without GPUs is no kind of it", {"5 cpu=1", "1 cpu=1 gpu=500m"}, 700, 200'000},
      {"nothing free, nothing wasted", {"1 cpu=1 gpu=500m"}, 0, 0},
      {"beyond one GPU's amount counts as one GPU's", {"1 cpu=1 gpu=500m"}, 1200, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ExpectedWaste(Workload(c.workload)).Of(c.free), c.expected);
  }
}

TEST(ExpectedWasteTest, ADecreaseIsWhatTheShareTakesOutOfTheWalk) {
  const ExpectedWaste w(Workload({"1 cpu=1 gpu=650m", "1 cpu=1 gpu=320m", "1 cpu=1 gpu=230m"}));
  // A 230 on 350 free leaves 120 no kind fits: W 75 → 120.
  EXPECT_EQ(w.DecreaseOf(350, 230), 75'000 - 120'000);
  // A 320 on 350 free leaves 30: W 75 → 30.
  EXPECT_EQ(w.DecreaseOf(350, 320), 75'000 - 30'000);
}

TEST(ExpectedWasteTest, CountsOnlyTheKindsTheNodesCpuHosts) {
  // 700 free: with both kinds, a 500 leaves 200 (nothing fits) and a 300
  // leaves 400 (then a 300: 100), so W = (200 + 100) / 2; with 2 cores
  // only the 300 kind is hosted: 700 → 400 → 100.
  const ExpectedWaste w(Workload({"1 cpu=4000m gpu=500m", "1 cpu=1000m gpu=300m", "3 cpu=2000m"}));
  struct Case {
    std::string name;
    std::optional<int64_t> cpu_free;
    int64_t expected;  // W(700) · kScale
  };
  const std::vector<Case> cases = {
      {"CPU unknown: every kind", std::nullopt, 150'000},
      {"CPU for every kind", 8000, 150'000},
      {"CPU for exactly the larger kind's request", 4000, 150'000},
      {"CPU for the smaller kind only", 2000, 100'000},
      {"CPU for no kind: all of it is waste", 500, 700'000},
      {"no CPU at all", 0, 700'000},
      {"a node over-committed below zero", -1000, 700'000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(w.Of(700, c.cpu_free), c.expected);
  }
  EXPECT_EQ(w.cpu_levels(), (std::vector<int64_t>{1000, 4000})) << "pods without GPUs are no level";
}

TEST(ExpectedWasteTest, APodThatTakesTheCpuTheLeftoverNeedsIsChargedForIt) {
  const ExpectedWaste w(Workload({"1 cpu=4000m gpu=500m"}));
  // Half of an idle GPU: the other half waits for another 500 while 4 cores stay.
  EXPECT_EQ(w.DecreaseOf(1000, 500, 8000, 4000), 0);
  // The same, leaving 3 cores: no 500 will come, the half is lost.
  EXPECT_EQ(w.DecreaseOf(1000, 500, 8000, 3000), -500'000);
  // A GPU the node's CPU had stranded: filling it gains what was lost.
  EXPECT_EQ(w.DecreaseOf(500, 500, 3000, 2000), 500'000);
}

TEST(ExpectedWasteTest, KindsOfOneShareWalkAsOneOfTheirSummedArrivals) {
  const ExpectedWaste apart(Workload({"1 cpu=1000m gpu=500m", "2 cpu=3000m gpu=500m", "1 cpu=1000m gpu=300m"}));
  const ExpectedWaste merged(Workload({"3 cpu=3000m gpu=500m", "1 cpu=1000m gpu=300m"}));
  for (int64_t free = 0; free <= 1000; ++free) {
    SCOPED_TRACE(free);
    ASSERT_EQ(apart.Of(free), merged.Of(free));
    ASSERT_EQ(apart.Of(free, 4000), merged.Of(free, 4000));
  }
  // With 2 cores the first 500 kind and the 300 are hosted: 800 takes a 500
  // (300 left, which a 300 fills) or a 300 (500 left: a 500 fills it, a 300
  // leaves 200), W = (0 + (0 + 200) / 2) / 2.
  EXPECT_EQ(apart.Of(800, 2000), 50'000);
  // Merged, every 500 asks 3 cores: only 300s come, 800 → 500 → 200.
  EXPECT_EQ(merged.Of(800, 2000), 200'000);
}

TEST(ExpectedWasteTest, KeepsAtMostItsCpuLevelsAndTheHighest) {
  std::vector<std::string> kinds;
  for (int i = 1; i <= 100; ++i) kinds.push_back("1 cpu=" + std::to_string(i * 100) + "m gpu=500m");
  const ExpectedWaste w(Workload(kinds));
  EXPECT_LE(w.cpu_levels().size(), ExpectedWaste::kMaxCpuLevels);
  EXPECT_GT(w.cpu_levels().size(), ExpectedWaste::kMaxCpuLevels / 2) << "every other request, at worst";
  EXPECT_EQ(w.cpu_levels().front(), 100);
  EXPECT_EQ(w.cpu_levels().back(), 10'000) << "the last level hosts every kind";
  EXPECT_TRUE(std::is_sorted(w.cpu_levels().begin(), w.cpu_levels().end()));
  // Every kind hosted: two halves fill an idle GPU, whatever the CPU beyond the highest request.
  EXPECT_EQ(w.Of(1000, 20'000), 0);
  EXPECT_EQ(w.Of(1000, std::nullopt), 0);
  // Below the lowest request nothing is hosted.
  EXPECT_EQ(w.Of(1000, 99), 1'000'000);
}

// A node whose GPU 0 holds a 650 share (350 free) and GPU 1 a 470 (530
// free). A 230 share: the paper's fgd takes GPU 0 (fragment falls by 90
// milli-GPU there, rises by 5 on GPU 1) and leaves 120 that nothing fills
// (W 52.5 → 120); with the outlook it takes GPU 1 (W 152 → 70), keeping the
// 350 for a 320, the commonest share: 90 − 67.5 < −5 + 82.
TEST(ExpectedWasteTest, ALeftoverOnlyRareKindsFitIsDeadAndRegretsWhatTheBestFittingKindWouldHaveLeft) {
  // Of 100 arrivals one 160 and two 230s: leftovers from 230 up fit 3 %,
  // below 1 % (less than rareFitPercent): dead from 51 to 229.
  const ExpectedWaste w(Workload({"1 cpu=1 gpu=160m", "2 cpu=1 gpu=230m", "10 cpu=8 gpu=470m", "87 cpu=1 gpu=1"}));
  struct Case {
    std::string name;
    int64_t free;
    int64_t share;
    std::optional<int64_t> cpu;  // free before the pod; it takes 1 core
    bool dead;
    int64_t regret;
  };
  const std::vector<Case> cases = {
      {"a 320 beside a lone 470 leaves 210, where another 470 would leave 60", 530, 320, std::nullopt, true, 150},
      {"the 470 itself leaves 60: dead, but no kind would leave less", 530, 470, std::nullopt, true, 0},
      {"50 left is a full GPU", 530, 480, std::nullopt, false, 0},
      {"229 left fits the 160s alone", 530, 301, std::nullopt, true, 169},
      {"230 left fits the 230s: alive", 530, 300, std::nullopt, false, 0},
      {"a 230 that leaves 120 where nothing would leave less", 350, 230, std::nullopt, true, 0},
      {"on a node whose CPU hosts no 470 the best a 530 gets is a 230, leaving 300", 530, 320, 4000, true, 0},
      {"with the CPU for a 470", 530, 320, 16000, true, 150},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<int64_t> after = c.cpu.has_value() ? std::optional<int64_t>(*c.cpu - 1000) : std::nullopt;
    EXPECT_EQ(w.Dead(c.free - c.share, after), c.dead);
    EXPECT_EQ(w.DeadLeftoverRegret(c.free, c.share, c.cpu, after), c.regret);
  }
  const ExpectedWaste rare(Workload({"1 cpu=1 gpu=500m", "99 cpu=1"}));
  EXPECT_TRUE(rare.Dead(600)) << "kinds that never make 2 % of arrivals fill nothing";
  EXPECT_FALSE(rare.Dead(40));
}

TEST(ExpectedWasteTest, FgdsFilledMilliAndRareFitPercentArgsMoveWhatIsDead) {
  // One 500 share in 100 arrivals: 1 %.
  const TargetWorkload workload = Workload({"1 cpu=1 gpu=500m", "99 cpu=1"});
  const auto with = [&](int64_t filled, int64_t rare_percent) {
    return ExpectedWaste(workload, ExpectedWasteOptions{.filled_milli = filled, .rare_fit_percent = rare_percent});
  };
  EXPECT_TRUE(with(50, 2).Dead(600)) << "the defaults: 1 % is rare";
  EXPECT_FALSE(with(50, 1).Dead(600)) << "rareFitPercent 1: the 500s count, and fill 600";
  EXPECT_TRUE(with(50, 2).Dead(80));
  EXPECT_FALSE(with(100, 2).Dead(80)) << "filledMilli 100: 80 left is a full GPU";
}

TEST(LeftoverOutlookTest, AShareThatWouldLeaveASharedGpuDeadGoesWhereItLeavesRoomForACommonKind) {
  // A 320 beside the lone 470 would leave 210, which only the 160s (1 % of
  // arrivals) fit; beside the lone 320 it leaves 360, which a 320 fits.
  const auto workload = [](const std::string& small_shares) {
    return Workload({small_shares, "10 cpu=1 gpu=470m", "10 cpu=1 gpu=320m", "10 cpu=1 gpu=650m", "69 cpu=1 gpu=1"});
  };
  const Node node = Node("n").Gpus(3).Hold(0, 470).Hold(1, 320).Host(16000, 16000);
  const NodeView view = node.View();
  const CycleState pod(Pod().Fraction(320).Cpu(1000));
  const MeasureArgs with_outlook = testing::Measure(KindWeights::kPerGpuAsked, /*gpu_memory=*/false, /*leftover_outlook=*/true);
  struct Case {
    std::string name;
    std::string small_shares;
    int32_t expected_gpu;
  };
  const std::vector<Case> cases = {
      {"160s are rare: the 210 would stay empty", "1 cpu=1 gpu=160m", 1},
      {"160s are common: the 210 will be filled", "10 cpu=1 gpu=160m", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const FgdPlugin fgd(workload(c.small_shares), GpuShareArgs{}, with_outlook);
    const std::optional<GpuChoice> choice = fgd.ChooseGpus(pod, view);
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->gpu_indices[0], c.expected_gpu);
    EXPECT_EQ(*choice->chooser_score, fgd.ScoreNode(pod, view, *choice)) << "the score it carries is Score's";
  }
}

TEST(LeftoverOutlookTest, AShareGoesWhereWhatItLeavesCanStillBeFilled) {
  const TargetWorkload w = Workload({"1 cpu=1000m gpu=650m", "1 cpu=1000m gpu=470m", "3 cpu=1000m gpu=320m",
                                     "1 cpu=1000m gpu=230m", "4 cpu=1000m gpu=1"});
  const Node node = Node("n").Gpus(2).Hold(0, 650).Hold(1, 470).Host(16000, 16000);
  const NodeView view = node.View();
  const CycleState pod(Pod().Fraction(230).Cpu(1000));
  const FgdPlugin paper(w, GpuShareArgs{}, MeasureArgs{});
  const FgdPlugin outlook(w, GpuShareArgs{},
                          testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/false, /*leftover_outlook=*/true));
  const std::optional<GpuChoice> by_paper = paper.ChooseGpus(pod, view);
  const std::optional<GpuChoice> by_outlook = outlook.ChooseGpus(pod, view);
  ASSERT_TRUE(by_paper.has_value() && by_outlook.has_value());
  EXPECT_EQ(by_paper->gpu_indices[0], 0);
  EXPECT_EQ(by_outlook->gpu_indices[0], 1);
  EXPECT_EQ(*by_outlook->chooser_score, outlook.ScoreNode(pod, view, *by_outlook)) << "the score it carries is Score's";
  // Ranking agrees with the choice.
  RankedGpus ranked;
  outlook.RankGpus(pod, view, ranked);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked.front().index, 1);
  // A learned mix keeps the extension.
  const std::shared_ptr<const Plugin> learned = outlook.WithWorkload(std::make_shared<const TargetWorkload>(w));
  const std::optional<GpuChoice> by_learned = As<GpuChooserPlugin>(*learned)->ChooseGpus(pod, view);
  ASSERT_TRUE(by_learned.has_value());
  EXPECT_EQ(by_learned->gpu_indices[0], 1);
}

// As above, but whether the node's CPU can host a 320 decides: with 3.5
// cores free a 320's 4 cores never come, so keeping the 350 for one gains
// nothing, and the 230 fills it (W 120 → 120) rather than leave 300 on
// GPU 1 (W 65 → 70); with 16 cores the outlook keeps the 350 as above.
TEST(LeftoverOutlookTest, KeepsALeftoverOnlyForKindsTheNodesCpuCanHost) {
  struct Case {
    std::string name;
    int64_t cpu_free;
    int32_t expected_gpu;
  };
  const std::vector<Case> cases = {
      {"a node that can host a 320 keeps its 350 for one", 16000, 1},
      {"a node that cannot fills its 350", 3500, 0},
  };
  const TargetWorkload w = Workload({"1 cpu=1000m gpu=650m", "1 cpu=1000m gpu=470m", "3 cpu=4000m gpu=320m",
                                     "1 cpu=1000m gpu=230m", "4 cpu=1000m gpu=1"});
  const FgdPlugin outlook(w, GpuShareArgs{},
                          testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/false, /*leftover_outlook=*/true));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Node node = Node("n").Gpus(2).Hold(0, 650).Hold(1, 470).Host(c.cpu_free, 16000);
    const NodeView view = node.View();
    const CycleState pod(Pod().Fraction(230).Cpu(1000));
    const std::optional<GpuChoice> choice = outlook.ChooseGpus(pod, view);
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->gpu_indices[0], c.expected_gpu);
    EXPECT_EQ(*choice->chooser_score, outlook.ScoreNode(pod, view, *choice)) << "the score it carries is Score's";
  }
}

// Where the cluster is short of CPU, a share also pays for what the CPU it
// takes does to the node's other GPUs. GPU 1 has 600 free and takes the
// 600 share; idle GPU 0 expects a whole-GPU pod (8 cores) or a 600 (W =
// (0 + 400) / 2 = 200) while 9 cores stay, only a 600 (W = 400) once the
// pod's 2 are gone: the node scores lower. With 16 cores nothing is lost.
TEST(LeftoverOutlookTest, WhereCpuBindsAShareAlsoPaysForTheCpuTheNodesOtherGpusNeed) {
  struct Case {
    std::string name;
    int64_t cpu_free;
    bool cost_expected;
  };
  const std::vector<Case> cases = {
      {"the pod leaves too little CPU for the whole-GPU kind", 9000, true},
      {"the pod leaves enough", 16000, false},
  };
  const TargetWorkload arrivals = Workload({"1 cpu=8000m gpu=1", "1 cpu=1000m gpu=600m"});
  const MeasureArgs measure = testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/false, /*leftover_outlook=*/true);
  // The cluster's CPU per GPU against the arrivals' (9 cores a 1.6 GPUs).
  const FgdPlugin short_of_cpu(arrivals.WithClusterCpu({.cpu = 1000, .gpu = 1000}), GpuShareArgs{}, measure);
  const FgdPlugin rich_in_cpu(arrivals.WithClusterCpu({.cpu = 100'000, .gpu = 1000}), GpuShareArgs{}, measure);
  ASSERT_TRUE(short_of_cpu.workload().cpu_short());
  ASSERT_FALSE(rich_in_cpu.workload().cpu_short());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Node node = Node("n").Gpus(2).Hold(1, 400).Host(c.cpu_free, 16000);
    const NodeView view = node.View();
    const CycleState pod(Pod().Fraction(600).Cpu(2000));
    const std::optional<GpuChoice> short_choice = short_of_cpu.ChooseGpus(pod, view);
    const std::optional<GpuChoice> rich_choice = rich_in_cpu.ChooseGpus(pod, view);
    ASSERT_TRUE(short_choice.has_value() && rich_choice.has_value());
    EXPECT_EQ(short_choice->gpu_indices[0], 1);
    EXPECT_EQ(rich_choice->gpu_indices[0], 1);
    const int64_t short_score = short_of_cpu.ScoreNode(pod, view, *short_choice);
    const int64_t rich_score = rich_in_cpu.ScoreNode(pod, view, *rich_choice);
    EXPECT_EQ(*short_choice->chooser_score, short_score) << "the score it carries is Score's";
    if (c.cost_expected) {
      EXPECT_LT(short_score, rich_score);
    } else {
      EXPECT_EQ(short_score, rich_score);
    }
  }
}

// The walk assumes every kind may fill every GPU. On a node some kind may
// not use (it names another model), the outlook stays out and fgd chooses
// as the paper's; where every kind may use the node's model, it counts.
TEST(LeftoverOutlookTest, OnlyOnNodesEveryKindMayUse) {
  struct Case {
    std::string name;
    std::string kind_of_230;  // the workload's 230 kind, naming models or not
    int32_t expected_gpu;
  };
  const std::vector<Case> cases = {
      {"every kind takes any model", "1 cpu=1000m gpu=230m", 1},
      {"a kind names the node's model", "1 cpu=1000m gpu=230m models=NVIDIA-A100*", 1},
      {"a kind names another model only", "1 cpu=1000m gpu=230m models=T4", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TargetWorkload w = Workload({"1 cpu=1000m gpu=650m", "1 cpu=1000m gpu=470m", "3 cpu=1000m gpu=320m",
                                       c.kind_of_230, "4 cpu=1000m gpu=1"});
    const Node node = Node("n").Gpus(2).Hold(0, 650).Hold(1, 470).Host(16000, 16000);
    const NodeView view = node.View();
    const CycleState pod(Pod().Fraction(230).Cpu(1000));
    const FgdPlugin outlook(w, GpuShareArgs{},
                            testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/false, /*leftover_outlook=*/true));
    const std::optional<GpuChoice> choice = outlook.ChooseGpus(pod, view);
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->gpu_indices[0], c.expected_gpu);
    EXPECT_EQ(*choice->chooser_score, outlook.ScoreNode(pod, view, *choice));
  }
}

TEST(LeftoverOutlookTest, WholeGpuPodsScoreAsWithoutIt) {
  const TargetWorkload w = Workload({"3 cpu=1000m gpu=650m", "3 cpu=1000m gpu=320m", "4 cpu=1000m gpu=1"});
  const Node node = Node("n").Gpus(4).Hold(0, 650).Host(16000, 16000);
  const NodeView view = node.View();
  const CycleState pod(Pod().Count(2).Cpu(1000));
  const FgdPlugin paper(w, GpuShareArgs{}, MeasureArgs{});
  const FgdPlugin outlook(w, GpuShareArgs{},
                          testing::Measure(KindWeights::kPerPod, /*gpu_memory=*/false, /*leftover_outlook=*/true));
  const std::optional<GpuChoice> choice = paper.ChooseGpus(pod, view);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(outlook.ChooseGpus(pod, view)->gpu_indices, choice->gpu_indices);
  EXPECT_EQ(outlook.ScoreNode(pod, view, *choice), paper.ScoreNode(pod, view, *choice));
}

TEST(LeftoverOutlookTest, OnlyFgdReadsItItsTwoValuesAndWhatMakesALeftoverDead) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string fgd_error;       // empty: accepted
    std::string stranding_error;
  };
  const std::vector<Case> cases = {
      {"the paper's by default", "workload: [\"1 cpu=1 gpu=1\"]\n", "", ""},
      {"the outlook", "workload: [\"1 cpu=1 gpu=1\"]\nleftover: outlook\n", "", "leftover"},
      {"said off", "workload: [\"1 cpu=1 gpu=1\"]\nleftover: ignore\n", "", "leftover"},
      {"an unknown value", "workload: [\"1 cpu=1 gpu=1\"]\nleftover: always\n", "args.leftover", "leftover"},
      {"the dead-leftover args", "workload: [\"1 cpu=1 gpu=1\"]\nleftover: outlook\ndeadLeftoverWeight: 8\n"
       "filledMilli: 40\nrareFitPercent: 1\n", "", "deadLeftoverWeight"},
      {"a dead-leftover weight out of range", "workload: [\"1 cpu=1 gpu=1\"]\ndeadLeftoverWeight: 101\n",
       "args.deadLeftoverWeight: must be an integer in 0..100", "deadLeftoverWeight"},
      {"a filled GPU past half of one", "workload: [\"1 cpu=1 gpu=1\"]\nfilledMilli: 501\n",
       "args.filledMilli: must be an integer in 0..500", "filledMilli"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PluginArgs> fgd_args = PluginArgs::FromText(c.yaml);
    absl::StatusOr<PluginArgs> stranding_args = PluginArgs::FromText(c.yaml);
    ASSERT_TRUE(fgd_args.ok() && stranding_args.ok());
    const absl::StatusOr<std::unique_ptr<Plugin>> fgd = FgdPlugin::New(*fgd_args);
    const absl::StatusOr<std::unique_ptr<Plugin>> stranding = HostStrandingPlugin::New(*stranding_args);
    if (c.fgd_error.empty()) {
      EXPECT_TRUE(fgd.ok()) << fgd.status();
    } else {
      EXPECT_THAT(fgd.status().message(), HasSubstr(c.fgd_error));
    }
    if (c.stranding_error.empty()) {
      EXPECT_TRUE(stranding.ok()) << stranding.status();
    } else {
      EXPECT_THAT(stranding.status().message(), HasSubstr(c.stranding_error));
    }
  }
}

}  // namespace
}  // namespace tessera
