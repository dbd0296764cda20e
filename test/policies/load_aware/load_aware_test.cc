#include "policies/load_aware/load_aware.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/framework/plugin_args.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Node;
using testing::Pod;
using ::testing::HasSubstr;

// Every test judges freshness at this instant.
const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);
absl::Time FixedNow() { return kNow; }

// One GPU's measurement, `age` before kNow (Telemetry() trusts it for 3 minutes).
GpuTelemetry Measured(int32_t index, int64_t util_percent, absl::Duration age = absl::Seconds(10)) {
  GpuTelemetry g;
  g.index = index;
  g.sampled_at = kNow - age;
  g.utilization = PerMille(util_percent * 10);
  g.sustained_utilization = PerMille(util_percent * 10);
  return g;
}

GpuTelemetry WithMemory(const GpuTelemetry& measured, int64_t used_mib, int64_t free_mib) {
  GpuTelemetry g = measured;
  g.memory_used = MemoryMiB(used_mib);
  g.memory_free = MemoryMiB(free_mib);
  return g;
}

NodeTelemetry Telemetry(std::vector<GpuTelemetry> gpus) {
  NodeTelemetry t;
  t.gpus.assign(gpus.begin(), gpus.end());
  t.stale_after = absl::Minutes(3);
  t.utilization_window = "1m avg";
  t.sustained_window = "5m avg";
  return t;
}

// A node view with telemetry and bindings attached (the builders know neither).
struct MeasuredNode {
  Node node;
  NodeTelemetry telemetry;
  std::vector<GpuBinding> bindings;

  [[nodiscard]] NodeView View() const {
    NodeView v = node.View();
    v.telemetry = &telemetry;
    v.bindings = bindings;
    return v;
  }
};

LoadAwareArgs DefaultArgs() { return LoadAwareArgs{}; }

GpuChoice Gpus(std::initializer_list<int32_t> indices) {
  GpuChoice c;
  for (int32_t i : indices) c.gpu_indices.push_back(i);
  return c;
}

TEST(LoadAwareScore, IdleMeasuredGpuBeatsBusyOne) {
  const LoadAwarePlugin plugin(DefaultArgs(), &FixedNow);
  const MeasuredNode idle{Node("idle").Gpus(1), Telemetry({Measured(0, 5)}), {}};
  const MeasuredNode busy{Node("busy").Gpus(1), Telemetry({Measured(0, 70)}), {}};
  const Pod pod = Pod().Fraction(250);
  EXPECT_GT(plugin.ScoreNode(CycleState(pod), idle.View(), Gpus({0})), plugin.ScoreNode(CycleState(pod), busy.View(), Gpus({0})));
}

TEST(LoadAwareScore, MissingStaleOrEmptyTelemetryIsNeutral) {
  const LoadAwarePlugin plugin(DefaultArgs(), &FixedNow);
  const Pod pod = Pod().Fraction(250);
  const Node bare = Node("bare").Gpus(2);
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), bare.View(), Gpus({0})), 50);

  const MeasuredNode stale{Node("stale").Gpus(1), Telemetry({Measured(0, 99, absl::Minutes(4))}), {}};
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), stale.View(), Gpus({0})), 50);

  GpuTelemetry nothing;
  nothing.index = 0;
  nothing.sampled_at = kNow;
  const MeasuredNode empty{Node("empty").Gpus(1), Telemetry({nothing}), {}};
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), empty.View(), Gpus({0})), 50);

  // A GPU the telemetry does not list counts neutral beside a measured one.
  const MeasuredNode partial{Node("partial").Gpus(2), Telemetry({Measured(1, 0)}), {}};
  const int64_t both = plugin.ScoreNode(CycleState(pod), partial.View(), Gpus({0, 1}));
  const int64_t measured_only = plugin.ScoreNode(CycleState(pod), partial.View(), Gpus({1}));
  EXPECT_EQ(both, (measured_only + 50 + 1) / 2);
}

TEST(LoadAwareScore, NeutralScoreIsConfigurable) {
  LoadAwareArgs args;
  args.neutral_score = 30;
  const LoadAwarePlugin plugin(args, &FixedNow);
  EXPECT_EQ(plugin.ScoreNode(CycleState(Pod().Fraction(100)), Node("n").Gpus(1).View(), Gpus({0})), 30);
}

TEST(LoadAwareScore, ComputeScoreIsHeadroomAfterThePodsOwnEstimate) {
  LoadAwareArgs args;
  args.memory_weight = 0;
  args.hot_spot_penalty_percent = 0;
  const LoadAwarePlugin plugin(args, &FixedNow);
  const MeasuredNode n{Node("n").Gpus(1), Telemetry({Measured(0, 20)}), {}};
  // 20% measured + 0.25 guaranteed + (0.5 - 0.25) x 50% burst = 57.5% -> 42.5 -> 43.
  EXPECT_EQ(plugin.ScoreNode(CycleState(Pod().Fraction(250).Limit(500)), n.View(), Gpus({0})), 43);
  // A whole-GPU pod gets the card to itself: only the measured load competes.
  EXPECT_EQ(plugin.ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 80);
}

TEST(LoadAwareScore, PodsBoundSinceTheSampleAreEstimated) {
  LoadAwareArgs args;
  args.pod_warmup = absl::ZeroDuration();
  const LoadAwarePlugin plugin(args, &FixedNow);
  const Pod pod = Pod().Fraction(100);
  MeasuredNode n{Node("n").Gpus(2), Telemetry({Measured(0, 10, absl::Seconds(30)), Measured(1, 10)}), {}};
  const int64_t before = plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0}));
  // Bound 5 s ago to GPU 0, after GPU 0's sample (30 s old): estimated.
  n.bindings = {GpuBinding{.bound_at = kNow - absl::Seconds(5), .index = 0, .guaranteed = MilliGpu(500),
                           .limit = MilliGpu(500), .memory = MemoryMiB(0)}};
  EXPECT_LT(plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0})), before);
  // The same pod bound 60 s ago: GPU 0's sample already shows it.
  n.bindings[0].bound_at = kNow - absl::Seconds(60);
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0})), before);
  // A pod on another GPU changes nothing here.
  n.bindings = {GpuBinding{.bound_at = kNow, .index = 1, .guaranteed = MilliGpu(500), .limit = MilliGpu(500),
                           .memory = MemoryMiB(0)}};
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0})), before);
}

TEST(LoadAwareScore, WarmupKeepsEstimatingPodsBoundJustBeforeTheSample) {
  LoadAwareArgs args;
  args.pod_warmup = absl::Seconds(60);
  const LoadAwarePlugin plugin(args, &FixedNow);
  const Pod pod = Pod().Fraction(100);
  MeasuredNode n{Node("n").Gpus(1), Telemetry({Measured(0, 10, absl::Seconds(10))}), {}};
  const int64_t before = plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0}));
  // Bound 30 s ago, 20 s before the sample: still starting up, still estimated.
  n.bindings = {GpuBinding{.bound_at = kNow - absl::Seconds(30), .index = 0, .guaranteed = MilliGpu(500),
                           .limit = MilliGpu(500), .memory = MemoryMiB(0)}};
  EXPECT_LT(plugin.ScoreNode(CycleState(pod), n.View(), Gpus({0})), before);
}

TEST(LoadAwareScore, MemoryActuallyUsedLowersTheScore) {
  LoadAwareArgs args;
  args.utilization_weight = 0;
  const LoadAwarePlugin plugin(args, &FixedNow);
  const Pod pod = Pod().Fraction(100).Memory(8192);
  const MeasuredNode roomy{Node("a").Gpus(1), Telemetry({WithMemory(Measured(0, 0), 8192, 73728)}), {}};
  const MeasuredNode crowded{Node("b").Gpus(1), Telemetry({WithMemory(Measured(0, 0), 65536, 16384)}), {}};
  // (8192 + 8192) / 81920 used -> 80; (65536 + 8192) / 81920 -> 10.
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), roomy.View(), Gpus({0})), 80);
  EXPECT_EQ(plugin.ScoreNode(CycleState(pod), crowded.View(), Gpus({0})), 10);
}

TEST(LoadAwareScore, HotSpotsArePenalisedBeyondTheLinearHeadroom) {
  LoadAwareArgs args;
  args.memory_weight = 0;
  args.hot_spot_threshold_percent = 80;
  args.hot_spot_penalty_percent = 100;
  const LoadAwarePlugin plugin(args, &FixedNow);
  const MeasuredNode n{Node("n").Gpus(1), Telemetry({Measured(0, 90)}), {}};
  // Headroom 10, and the whole penalty at 90% demand halfway from 80% to 100%: 10 x 0.5 = 5.
  EXPECT_EQ(plugin.ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 5);
  LoadAwareArgs gentle = args;
  gentle.hot_spot_penalty_percent = 0;
  EXPECT_EQ(LoadAwarePlugin(gentle, &FixedNow).ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 10);
}

TEST(LoadAwareScore, SmActivityReplacesTheShortWindowWhenReported) {
  LoadAwareArgs args;
  args.memory_weight = 0;
  args.long_window_weight = 0;
  args.hot_spot_penalty_percent = 0;
  GpuTelemetry g = Measured(0, 100);  // a kernel always running...
  g.sm_active = PerMille(300);        // ...on 30% of the SMs
  const MeasuredNode n{Node("n").Gpus(1), Telemetry({g}), {}};
  EXPECT_EQ(LoadAwarePlugin(args, &FixedNow).ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 70);
  args.use_sm_active = false;
  EXPECT_EQ(LoadAwarePlugin(args, &FixedNow).ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 0);
}

TEST(LoadAwareScore, WindowsAreBlendedByWeight) {
  LoadAwareArgs args;
  args.memory_weight = 0;
  args.hot_spot_penalty_percent = 0;
  args.short_window_weight = 1;
  args.long_window_weight = 3;
  GpuTelemetry g = Measured(0, 0);
  g.utilization = PerMille(800);
  g.sustained_utilization = PerMille(400);
  const MeasuredNode n{Node("n").Gpus(1), Telemetry({g}), {}};
  EXPECT_EQ(LoadAwarePlugin(args, &FixedNow).ScoreNode(CycleState(Pod()), n.View(), Gpus({0})), 50);  // 1000 - 500
}

// gpu-share choosing the GPUs and load-aware ruling GPUs out, as a policy
// file with both would build them.
std::shared_ptr<const Profile> GpuShareWithLoadAware(const LoadAwareArgs& args) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  plugins.push_back({std::make_unique<LoadAwarePlugin>(args, &FixedNow), 1});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  EXPECT_TRUE(profile.ok()) << profile.status();
  return *profile;
}

LoadAwareArgs RejectingBusyAbove(int64_t percent) {
  LoadAwareArgs args;
  args.reject_busy_gpus = true;
  args.busy_threshold_percent = percent;
  return args;
}

TEST(LoadAwareGpuFilter, BusyGpusAreRuledOutOnlyWhenAsked) {
  const MeasuredNode n{Node("n").Gpus(3), Telemetry({Measured(0, 20), Measured(1, 97), Measured(2, 95)}), {}};
  const Pod two = Pod().Fraction(500).Count(2);
  const auto permissive = GpuShareWithLoadAware(DefaultArgs());
  EXPECT_TRUE(permissive->Filter(CycleState(two), n.View()).ok());
  EXPECT_EQ(permissive->ChooseGpus(CycleState(two), n.View()), Gpus({0, 1}));

  const auto strict = GpuShareWithLoadAware(RejectingBusyAbove(90));
  const FilterVerdict v = strict->Filter(CycleState(two), n.View());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.code, FilterCode::kUnschedulable);
  EXPECT_EQ(v.reason_code, LoadAwarePlugin::kBusyReason);
  EXPECT_EQ(v.message,
            "GPU 1 at 97 percent utilisation (5m avg) above the 90 percent threshold; "
            "GPU 2 at 95 percent utilisation (5m avg) above the 90 percent threshold");
  EXPECT_EQ(strict->ChooseGpus(CycleState(two), n.View()), std::nullopt);
  // One cool GPU is enough for a one-GPU pod, and it is the one it gets.
  EXPECT_TRUE(strict->Filter(CycleState(Pod().Fraction(500)), n.View()).ok());
  EXPECT_EQ(strict->ChooseGpus(CycleState(Pod().Fraction(500)), n.View()), Gpus({0}));
}

TEST(LoadAwareGpuFilter, ThePodGetsACoolGpuEvenWhereTheChooserPreferredTheHotOne) {
  // gpu-share packs: it prefers half-used GPU 0, which runs at 97%.
  const MeasuredNode n{Node("n").Gpus(4).Hold(0, 500), Telemetry({Measured(0, 97), Measured(1, 97), Measured(2, 5),
                                                                   Measured(3, 5)}), {}};
  const Pod quarter = Pod().Fraction(250);
  EXPECT_EQ(GpuShareWithLoadAware(DefaultArgs())->ChooseGpus(CycleState(quarter), n.View()), Gpus({0}));

  const auto strict = GpuShareWithLoadAware(RejectingBusyAbove(90));
  EXPECT_TRUE(strict->Filter(CycleState(quarter), n.View()).ok());
  EXPECT_EQ(strict->ChooseGpus(CycleState(quarter), n.View()), Gpus({2}));
  // Prioritize scores the same GPUs bind will get.
  std::vector<std::optional<GpuChoice>> choices;
  const std::vector<NodeView> views = {n.View()};
  (void)strict->Score(CycleState(quarter), testing::Pointers(views), &choices);
  EXPECT_EQ(choices[0], Gpus({2}));
  // Two GPUs: the two cool ones, never a hot one beside a cool one.
  EXPECT_EQ(strict->ChooseGpus(CycleState(Pod().Fraction(250).Count(2)), n.View()), Gpus({2, 3}));
}

TEST(LoadAwareGpuFilter, UnknownAndStaleGpusAreNeverRuledOut) {
  const auto strict = GpuShareWithLoadAware(RejectingBusyAbove(90));
  const MeasuredNode stale{Node("n").Gpus(1), Telemetry({Measured(0, 99, absl::Minutes(5))}), {}};
  EXPECT_TRUE(strict->Filter(CycleState(Pod().Fraction(500)), stale.View()).ok());
  const MeasuredNode unlisted{Node("n").Gpus(2), Telemetry({Measured(0, 99)}), {}};
  EXPECT_TRUE(strict->Filter(CycleState(Pod().Fraction(500)), unlisted.View()).ok());
  EXPECT_EQ(strict->ChooseGpus(CycleState(Pod().Fraction(500)), unlisted.View()), Gpus({1}));
  EXPECT_TRUE(strict->Filter(CycleState(Pod().Fraction(500)), Node("bare").Gpus(1).View()).ok());
}

TEST(LoadAwareGpuFilter, FallsBackToTheShortWindowAndNamesIt) {
  GpuTelemetry g = Measured(0, 0);
  g.utilization = PerMille(925);
  g.sustained_utilization = PerMille(GpuTelemetry::kUnknown);
  const MeasuredNode n{Node("n").Gpus(1), Telemetry({g}), {}};
  const FilterVerdict v = GpuShareWithLoadAware(RejectingBusyAbove(90))->Filter(CycleState(Pod().Fraction(100)), n.View());
  EXPECT_EQ(v.message, "GPU 0 at 92.5 percent utilisation (1m avg) above the 90 percent threshold");
}

TEST(LoadAwareGpuFilter, GpusWithoutRoomAreLeftToTheChooserToExplain) {
  const auto strict = GpuShareWithLoadAware(RejectingBusyAbove(90));
  // GPU 0 is cool but full by reservation; GPU 1 has room but is busy.
  const MeasuredNode n{Node("n").Gpus(2).Hold(0, 1000), Telemetry({Measured(0, 10), Measured(1, 99)}), {}};
  const FilterVerdict v = strict->Filter(CycleState(Pod().Fraction(250)), n.View());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.message, "GPU 1 at 99 percent utilisation (5m avg) above the 90 percent threshold");
  // Nothing has room: gpu-share's rejection, which says so, not ours.
  const MeasuredNode full{Node("n").Gpus(1).Hold(0, 1000), Telemetry({Measured(0, 99)}), {}};
  const FilterVerdict gpu_share = strict->Filter(CycleState(Pod().Fraction(250)), full.View());
  ASSERT_FALSE(gpu_share.ok());
  EXPECT_NE(gpu_share.reason_code, LoadAwarePlugin::kBusyReason);
}

TEST(LoadAwareGpuFilter, MemoryGuardWantsTheGuaranteedMemoryActuallyFree) {
  const auto guarded = GpuShareWithLoadAware(DefaultArgs());  // the guard is on by default
  MeasuredNode n{Node("n").Gpus(1), Telemetry({WithMemory(Measured(0, 10), 75000, 6920)}), {}};
  const FilterVerdict v = guarded->Filter(CycleState(Pod().Fraction(250).Memory(10240)), n.View());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.reason_code, LoadAwarePlugin::kMemoryReason);
  EXPECT_EQ(v.message, "GPU 0 has 6920 MiB of memory free in fact (measured, 75000 MiB in use), pod needs 10240 MiB");
  EXPECT_TRUE(guarded->Filter(CycleState(Pod().Fraction(250).Memory(4096)), n.View()).ok());

  // Memory reserved by a pod bound since the sample is not free either. (The
  // pod holds its share, as every binding's pod does in the cluster model.)
  n.node.Hold(0, 250, 4096);
  n.bindings = {GpuBinding{.bound_at = kNow, .index = 0, .guaranteed = MilliGpu(250), .limit = MilliGpu(250),
                           .memory = MemoryMiB(4096)}};
  EXPECT_FALSE(guarded->Filter(CycleState(Pod().Fraction(250).Memory(4096)), n.View()).ok());

  LoadAwareArgs off;
  off.memory_guard = false;
  EXPECT_TRUE(GpuShareWithLoadAware(off)->Filter(CycleState(Pod().Fraction(250).Memory(10240)), n.View()).ok());
}

TEST(LoadAwareGpuFilter, MemoryGuardSteersThePodToTheGpuWithMemoryFreeInFact) {
  // By reservation both GPUs are empty; GPU 0 has an unknown process holding 70 GiB.
  const MeasuredNode n{Node("n").Gpus(2), Telemetry({WithMemory(Measured(0, 10), 71680, 10240),
                                                      WithMemory(Measured(1, 10), 1024, 80896)}), {}};
  const auto guarded = GpuShareWithLoadAware(DefaultArgs());
  EXPECT_EQ(guarded->ChooseGpus(CycleState(Pod().Fraction(250).Memory(16384)), n.View()), Gpus({1}));
  EXPECT_EQ(guarded->ChooseGpus(CycleState(Pod().Fraction(250).Memory(4096)), n.View()), Gpus({0}));
}

TEST(LoadAwareArgs, ReadsEveryArgAndRefusesNonsense) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText(
      "utilizationWeight: 3\nmemoryWeight: 0\nrejectBusyGpus: true\nbusyThresholdPercent: 85\n"
      "podWarmupSeconds: 30\nneutralScore: 40\nuseSmActive: false\n");
  ASSERT_TRUE(args.ok());
  absl::StatusOr<std::unique_ptr<Plugin>> plugin = LoadAwarePlugin::New(*args);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  const LoadAwareArgs& a = dynamic_cast<const LoadAwarePlugin&>(**plugin).args();
  EXPECT_EQ(a.utilization_weight, 3);
  EXPECT_EQ(a.memory_weight, 0);
  EXPECT_TRUE(a.reject_busy_gpus);
  EXPECT_EQ(a.busy_threshold_percent, 85);
  EXPECT_EQ(a.pod_warmup, absl::Seconds(30));
  EXPECT_EQ(a.neutral_score, 40);
  EXPECT_FALSE(a.use_sm_active);

  absl::StatusOr<PluginArgs> bad =
      PluginArgs::FromText("utilizationWeight: 0\nmemoryWeight: 0\nbusyThresholdPercent: 120\nhotSpot: 1\n");
  ASSERT_TRUE(bad.ok());
  absl::StatusOr<std::unique_ptr<Plugin>> refused = LoadAwarePlugin::New(*bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("cannot both be 0"));
  EXPECT_THAT(refused.status().message(), HasSubstr("args.yaml:3:23: args.busyThresholdPercent"));
  EXPECT_THAT(refused.status().message(), HasSubstr("args.hotSpot: unknown field"));
}

}  // namespace
}  // namespace tessera
