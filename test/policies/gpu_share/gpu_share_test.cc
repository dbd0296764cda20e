#include "policies/gpu_share/gpu_share.h"

#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

GpuSharePlugin Plugin(GpuShareArgs args = {}) { return GpuSharePlugin(args); }

struct FilterCase {
  std::string name;
  Node node;
  Pod pod;
  GpuShareArgs args;
  FilterCode code;
  std::string reason_code;
  std::string message_part;
};

TEST(GpuShareFilter, EveryVerdictCarriesItsPreciseReason) {
  GpuShareArgs reserve;
  reserve.memory_reserve = MemoryMiB(1024);
  GpuShareArgs no_overcommit;
  no_overcommit.max_limit_percent = 100;
  const std::vector<FilterCase> cases = {
      {"a quarter GPU fits on an idle card", Node("n").Gpus(1), Pod().Fraction(250), {}, FilterCode::kSuccess, "", ""},
      {"a quarter fits next to three quarters", Node("n").Gpus(1).Hold(0, 750), Pod().Fraction(250), {},
       FilterCode::kSuccess, "", ""},
      {"a quarter does not fit next to 0.88 and says how much is free", Node("n").Gpus(1).Hold(0, 880),
       Pod().Fraction(250), {}, FilterCode::kUnschedulable, "insufficient_gpu",
       "GPU 0 has 120/1000 milli free, pod needs 250"},
      {"a whole GPU needs an idle card", Node("n").Gpus(1).Hold(0, 100), Pod(), {}, FilterCode::kUnschedulable,
       "insufficient_gpu", "GPU 0 is shared by 1 pod and the pod needs a whole GPU"},
      {"memory that is taken is not now", Node("n").Gpus(1).Hold(0, 100, 80000), Pod().Fraction(100).Memory(10240), {},
       FilterCode::kUnschedulable, "insufficient_gpu", "GPU 0 has 1920 of 81920 MiB free, pod needs 10240 MiB"},
      {"memory larger than the card is never", Node("n").Gpus(2), Pod().Fraction(100).Memory(100000), {},
       FilterCode::kUnschedulableUnresolvable, "gpu_memory_too_small", "pod needs 100000 MiB per GPU"},
      {"the per-GPU reserve counts against the card", Node("n").Gpus(1), Pod().Fraction(100).Memory(81000), reserve,
       FilterCode::kUnschedulableUnresolvable, "gpu_memory_too_small", "largest: 80896 MiB usable"},
      {"a memory limit larger than the card is never and is named, not the request", Node("n").Gpus(1, testing::kT4, 15360),
       Pod().Fraction(100).Memory(4096).MemoryLimit(20480), {}, FilterCode::kUnschedulableUnresolvable,
       "gpu_memory_too_small",
       "pod's memory limit of 20480 MiB per GPU (tessera.io/gpu-memory-limit) fits on 0 accepted GPUs, pod needs 1 "
       "(a limit may reach 100 percent of a GPU's usable memory, maxMemoryLimitPercent; largest: 15360 MiB usable)"},
      {"a node without GPUs is never", Node("n"), Pod().Fraction(100), {}, FilterCode::kUnschedulableUnresolvable,
       "no_gpus", "node has no GPUs"},
      {"an unreadable inventory is never and says why", Node("n").Broken("bad JSON"), Pod(), {},
       FilterCode::kUnschedulableUnresolvable, "inventory_unreadable", "unreadable: bad JSON"},
      {"too few GPUs is never", Node("n").Gpus(2), Pod().Count(4), {}, FilterCode::kUnschedulableUnresolvable,
       "too_few_gpus", "node has 2 GPUs, pod needs 4"},
      {"too few free GPUs is not now", Node("n").Gpus(4).Hold(0, 500).Hold(1, 500), Pod().Count(3), {},
       FilterCode::kUnschedulable, "insufficient_gpu", "2 of the 3 GPUs the pod needs can take it now"},
      {"a refused model is never and lists what the node has", Node("n").Gpus(2, testing::kT4, 15360),
       Pod().Fraction(500).Models({"NVIDIA-A100*"}), {}, FilterCode::kUnschedulableUnresolvable, "gpu_model_mismatch",
       "node has 0 GPUs of an accepted model (accepted: NVIDIA-A100*), pod needs 1; node has 2x NVIDIA-T4"},
      {"an excluded model is never", Node("n").Gpus(1), Pod().ExcludeModels({testing::kA100}), {},
       FilterCode::kUnschedulableUnresolvable, "gpu_model_mismatch", "excluded: NVIDIA-A100-SXM4-80GB"},
      {"model names match ignoring case", Node("n").Gpus(1), Pod().Models({"nvidia-a100-sxm4-80gb"}), {},
       FilterCode::kSuccess, "", ""},
      {"unknown memory cannot hold a memory reservation", Node("n").Gpus(1, "", 0), Pod().Fraction(100).Memory(1024),
       {}, FilterCode::kUnschedulableUnresolvable, "gpu_memory_unknown", "memory of 1 GPU on this node is unknown"},
      {"a broken GPU is never used and the reason names it", Node("n").Gpus(8).Unhealthy(3), Pod().Count(8), {},
       FilterCode::kUnschedulableUnresolvable, "gpu_unhealthy",
       "node has 8 GPUs, 1 unhealthy (GPU 3; its tessera.io/gpu-inventory says why), pod needs 8 healthy"},
      {"a broken GPU of an accepted model is counted among the accepted",
       Node("n").Gpus(1).Gpus(2, testing::kT4, 15360).Unhealthy(0), Pod().Models({testing::kA100}), {},
       FilterCode::kUnschedulableUnresolvable, "gpu_unhealthy",
       "node has 1 GPUs of an accepted model, 1 unhealthy (GPU 0"},
      {"the healthy GPUs of a node with a broken one still take pods", Node("n").Gpus(8).Unhealthy(3), Pod().Count(7),
       {}, FilterCode::kSuccess, "", ""},
      {"a broken GPU is never taken even when idle and a share would fit", Node("n").Gpus(2).Unhealthy(0).Hold(1, 900),
       Pod().Fraction(250), {}, FilterCode::kUnschedulable, "insufficient_gpu", "GPU 1 has 100/1000 milli free"},
      {"a GPU in MIG mode takes no share and the reason says so", Node("n").Gpus(2).Mig(0).Mig(1, {{"7g.80gb", 0, ""}}),
       Pod().Fraction(250), {}, FilterCode::kUnschedulableUnresolvable, "gpus_in_mig_mode",
       "node has 0 GPUs that take shares, pod needs 1; 2 GPUs are in MIG mode and take only pods asking for a MIG "
       "profile"},
      {"the GPUs beside a MIG one still take shares", Node("n").Gpus(2).Mig(0), Pod().Fraction(250), {},
       FilterCode::kSuccess, "", ""},
      {"whole GPUs are never MIG ones", Node("n").Gpus(4).Mig(1).Mig(2), Pod().Count(3), {},
       FilterCode::kUnschedulableUnresolvable, "gpus_in_mig_mode", "node has 2 GPUs that take shares, pod needs 3"},
      {"burst limits may overcommit up to the cap", Node("n").Gpus(1).Hold(0, 200, 0, 1000),
       Pod().Fraction(200).Limit(1000), {}, FilterCode::kSuccess, "", ""},
      {"burst limits over the cap are not now", Node("n").Gpus(1).Hold(0, 200, 0, 1000),
       Pod().Fraction(200).Limit(800), no_overcommit, FilterCode::kUnschedulable, "insufficient_gpu",
       "burst limits would reach 1800/1000 milli (cap 100 percent)"},
      {"a long list of full GPUs is cut after four", Node("n").Gpus(8).Hold(0, 1000).Hold(1, 1000).Hold(2, 1000)
           .Hold(3, 1000).Hold(4, 1000).Hold(5, 1000).Hold(6, 1000).Hold(7, 1000),
       Pod().Fraction(100), {}, FilterCode::kUnschedulable, "insufficient_gpu", "(and 4 more GPUs)"},
  };
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    const FilterVerdict v = Plugin(c.args).FilterGpus(CycleState(c.pod), c.node.View());
    EXPECT_EQ(v.code, c.code) << v.message;
    EXPECT_EQ(v.reason_code, c.reason_code);
    EXPECT_THAT(v.message, HasSubstr(c.message_part));
  }
}

struct ChooseCase {
  std::string name;
  Node node;
  Pod pod;
  PlacementStrategy gpu_strategy;
  std::vector<int32_t> want;  // empty: no fit
};

// The fit test, as the file comment of gpu_share.h states it, written plainly.
bool FitsByTheRules(const GpuShareArgs& a, const PodGpuRequest& r, int64_t card_mib, const GpuUsage& u) {
  const int64_t usable = std::max<int64_t>(0, card_mib - a.memory_reserve.value());
  const int64_t memory_limit = std::max(r.memory.value(), r.memory_limit.value());
  if (r.memory.value() > 0) {
    if (card_mib == 0 || r.memory.value() > usable) return false;
    if (!r.whole_gpu && memory_limit * 100 > usable * a.max_memory_limit_percent) return false;
  }
  if (r.whole_gpu) return u.pods == 0;
  if (u.guaranteed.value() + r.guaranteed.value() > 1000) return false;
  if (u.limit.value() + r.limit.value() > 10 * a.max_limit_percent) return false;
  if (card_mib == 0) return true;
  return u.memory.value() + r.memory.value() <= usable &&
         (u.memory_limit.value() + memory_limit) * 100 <= usable * a.max_memory_limit_percent;
}

TEST(GpuShareFilter, TheFitTestFollowsTheRulesOnRandomGpusAndPods) {
  std::mt19937 rng(16);
  auto pick = [&](std::initializer_list<int64_t> values) { return *(values.begin() + rng() % values.size()); };
  for (int round = 0; round < 3000; ++round) {
    SCOPED_TRACE(round);
    GpuShareArgs args;
    args.memory_reserve = MemoryMiB(pick({0, 256, 1024}));
    args.max_limit_percent = pick({100, 150, 200});
    args.max_memory_limit_percent = pick({100, 120});
    const int64_t card = pick({0, 16384, 40960});
    Node node("n");
    node.Gpus(1, testing::kA100, card);
    for (int pods = static_cast<int>(rng() % 3); pods > 0; --pods) {
      node.Hold(0, pick({100, 250, 500, 1000}), pick({0, 4096, 20000}), pick({-1, 600, 1000}));
    }
    Pod pod;
    if (rng() % 3 != 0) pod.Fraction(pick({100, 250, 500, 900})).Limit(pick({500, 1000}));
    if (rng() % 2 == 0) pod.Memory(pick({2048, 10240, 40000}));
    if (rng() % 3 == 0) pod.MemoryLimit(pick({4096, 16384, 45000}));
    PodGpuRequest r = pod;
    if (r.limit < r.guaranteed) r.limit = r.guaranteed;
    const NodeView view = node.View();
    const GpuSharePlugin plugin(args);
    const CycleState cycle(r);
    const bool expected = FitsByTheRules(args, r, card, view.UsageOf(0));
    EXPECT_EQ(plugin.FitsOneGpu(cycle, view, 0), expected);
    EXPECT_EQ(plugin.FilterGpus(cycle, view).ok(), expected) << plugin.FilterGpus(cycle, view).message;
    EXPECT_EQ(plugin.ChooseGpus(cycle, view).has_value(), expected);
  }
}

TEST(GpuShareChooseGpus, BinpackAndSpreadPickTheExpectedGpus) {
  using S = PlacementStrategy;
  const std::vector<ChooseCase> cases = {
      {"binpack fills the fullest GPU that still fits", Node("n").Gpus(4).Hold(1, 500).Hold(2, 700),
       Pod().Fraction(300), S::kBinpack, {2}},
      {"binpack prefers a partly used GPU over opening an idle one", Node("n").Gpus(2).Hold(1, 100),
       Pod().Fraction(300), S::kBinpack, {1}},
      {"spread takes the emptiest GPU", Node("n").Gpus(3).Hold(0, 500).Hold(2, 100), Pod().Fraction(300),
       S::kSpread, {1}},
      {"ties go to the lower index", Node("n").Gpus(4), Pod().Fraction(300), S::kBinpack, {0}},
      {"whole GPUs take idle cards only", Node("n").Gpus(4).Hold(0, 100).Hold(2, 100), Pod().Count(2), S::kBinpack,
       {1, 3}},
      {"binpack breaks compute ties on memory", Node("n").Gpus(2).Hold(0, 500, 1000).Hold(1, 500, 5000),
       Pod().Fraction(200).Memory(1000), S::kBinpack, {1}},
      {"a bursting pod prefers a GPU where its limit has room", Node("n").Gpus(2).Hold(0, 600, 0, 900).Hold(1, 400),
       Pod().Fraction(200).Limit(500), S::kBinpack, {1}},
      {"an unhealthy GPU is skipped even when it is the best fit", Node("n").Gpus(3).Hold(1, 700).Unhealthy(1),
       Pod().Fraction(300), S::kBinpack, {0}},
      {"a share skips a GPU in MIG mode even when it is the best fit", Node("n").Gpus(3).Hold(0, 100).Mig(1),
       Pod().Fraction(300), S::kBinpack, {0}},
      {"whole GPUs skip a MIG one", Node("n").Gpus(3).Mig(0), Pod().Count(2), S::kBinpack, {1, 2}},
      {"whole GPUs skip an unhealthy one", Node("n").Gpus(4).Unhealthy(0), Pod().Count(2), S::kBinpack, {1, 2}},
      {"no fit gives no choice", Node("n").Gpus(2).Hold(0, 900).Hold(1, 900), Pod().Fraction(300), S::kBinpack, {}},
      {"a multi-GPU fractional pod takes distinct GPUs", Node("n").Gpus(3).Hold(2, 600), Pod().Fraction(400).Count(2),
       S::kBinpack, {2, 0}},
  };
  for (const ChooseCase& c : cases) {
    SCOPED_TRACE(c.name);
    GpuShareArgs args;
    args.gpu_strategy = c.gpu_strategy;
    const std::optional<GpuChoice> choice = Plugin(args).ChooseGpus(CycleState(c.pod), c.node.View());
    if (c.want.empty()) {
      EXPECT_FALSE(choice.has_value());
      continue;
    }
    ASSERT_TRUE(choice.has_value());
    EXPECT_THAT(choice->gpu_indices, ::testing::ElementsAreArray(c.want));
  }
}

TEST(GpuShareScore, BinpackPrefersTheFullerNodeAndSpreadTheEmptier) {
  const Node busy = Node("busy").Gpus(2).Hold(0, 1000).Hold(1, 500);
  const Node idle = Node("idle").Gpus(2);
  const Pod pod = Pod().Fraction(250);
  for (PlacementStrategy s : {PlacementStrategy::kBinpack, PlacementStrategy::kSpread}) {
    SCOPED_TRACE(s == PlacementStrategy::kBinpack ? "binpack" : "spread");
    GpuShareArgs args;
    args.node_strategy = s;
    const GpuSharePlugin plugin(args);
    std::vector<int64_t> scores;
    for (const Node* n : {&busy, &idle}) {
      const auto choice = plugin.ChooseGpus(CycleState(pod), n->View());
      ASSERT_TRUE(choice.has_value());
      scores.push_back(plugin.ScoreNode(CycleState(pod), n->View(), *choice));
    }
    // busy: (1000+500+250)/2000 = 875‰; idle: 250/2000 = 125‰.
    EXPECT_EQ(scores[0], s == PlacementStrategy::kBinpack ? 875 : 125);
    EXPECT_EQ(scores[1], s == PlacementStrategy::kBinpack ? 125 : 875);
    plugin.NormalizeScores(absl::MakeSpan(scores));
    EXPECT_EQ(scores[0], s == PlacementStrategy::kBinpack ? 100 : 0);
    EXPECT_EQ(scores[1], s == PlacementStrategy::kBinpack ? 0 : 100);
  }
}

TEST(GpuShareScore, EqualCandidatesKeepTheirAbsoluteLevel) {
  std::vector<int64_t> scores = {500, 500};
  Plugin().NormalizeScores(absl::MakeSpan(scores));
  EXPECT_THAT(scores, ::testing::ElementsAre(50, 50));
}

TEST(GpuShareShares, WholeGpusReserveTheCardAndFractionsTheirRequest) {
  const Node node = Node("n").Gpus(2);
  const GpuSharePlugin plugin({});
  GpuChoice choice;
  choice.gpu_indices = {1};
  const auto whole = plugin.SharesFor(CycleState(Pod()), node.View(), choice);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].guaranteed, kOneGpu);
  EXPECT_EQ(whole[0].memory, MemoryMiB(testing::kA100Mib));
  EXPECT_EQ(whole[0].uuid, "GPU-n-1");
  const auto part = plugin.SharesFor(CycleState(Pod().Fraction(250).Limit(800).Memory(4096)), node.View(), choice);
  EXPECT_EQ(part[0].guaranteed, MilliGpu(250));
  EXPECT_EQ(part[0].limit, MilliGpu(800));
  EXPECT_EQ(part[0].memory, MemoryMiB(4096));
}

struct ArgsCase {
  std::string name;
  std::string yaml;
  std::string error_part;  // empty: valid
};

TEST(GpuShareArgsTest, FactoryValidatesItsArgs) {
  const std::vector<ArgsCase> cases = {
      {"defaults are valid", "", ""},
      {"spread at both levels is valid", "nodeStrategy: spread\ngpuStrategy: spread", ""},
      {"an unknown strategy is refused", "nodeStrategy: pack", "args.nodeStrategy: must be one of binpack, spread"},
      {"a memory reserve takes a quantity", "gpuMemoryReserve: 512Mi", ""},
      {"an overcommit cap below 100% is refused", "maxLimitPercent: 50", "args.maxLimitPercent"},
      {"an unknown field is refused", "binpack: true", "args.binpack"},
  };
  for (const ArgsCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PluginArgs> args = PluginArgs::FromText(c.yaml);
    ASSERT_TRUE(args.ok()) << args.status();
    absl::StatusOr<std::unique_ptr<tessera::Plugin>> plugin = GpuSharePlugin::New(*args);
    if (c.error_part.empty()) {
      EXPECT_TRUE(plugin.ok()) << plugin.status();
    } else {
      ASSERT_FALSE(plugin.ok());
      EXPECT_THAT(std::string(plugin.status().message()), HasSubstr(c.error_part));
    }
  }
}

TEST(GpuShareArgsTest, MemoryReserveIsReadInMiB) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("gpuMemoryReserve: 1Gi\nmaxLimitPercent: 300");
  ASSERT_TRUE(args.ok());
  absl::StatusOr<std::unique_ptr<tessera::Plugin>> plugin = GpuSharePlugin::New(*args);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  const auto& share = dynamic_cast<const GpuSharePlugin&>(**plugin);
  EXPECT_EQ(share.args().memory_reserve, MemoryMiB(1024));
  EXPECT_EQ(share.args().max_limit_percent, 300);
}

}  // namespace
}  // namespace tessera
