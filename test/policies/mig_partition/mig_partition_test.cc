// mig-partition: which free MIG instance a pod gets, why a node cannot give
// one, and how MIG pods and share pods keep to their own GPUs in one profile.
#include "policies/mig_partition/mig_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::MigInstances;
using testing::Node;
using testing::Pod;

constexpr const char* kA100_40 = "NVIDIA-A100-SXM4-40GB";

// Seven 1g.10gb instances, slices 0..6: an A100-80GB cut as finely as it goes.
std::vector<MigInstance> SevenSmall() { return MigInstances("1g.10gb", {0, 1, 2, 3, 4, 5, 6}); }

// Concatenates instance lists: Join(MigInstances("3g.40gb", {0}), MigInstances("1g.10gb", {4, 5})).
std::vector<MigInstance> Join(std::vector<MigInstance> a, const std::vector<MigInstance>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Placed {
  int32_t gpu = -1;
  int32_t start = -1;
  bool operator==(const Placed&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Placed& p) { return os << "GPU " << p.gpu << " slice " << p.start; }

// Where the plugin puts the pod on the node: its GPU and the instance's start.
Placed PlaceOn(const MigPartitionPlugin& plugin, const Node& node, const Pod& pod) {
  const CycleState cycle(pod);
  const NodeView view = node.View();
  const std::optional<GpuChoice> choice = plugin.ChooseGpus(cycle, view);
  if (!choice.has_value()) return {};
  const std::vector<GpuShare> shares = plugin.SharesFor(cycle, view, *choice);
  if (shares.size() != 1 || !shares[0].mig.has_value()) return {.gpu = -2};
  return {.gpu = shares[0].index, .start = shares[0].mig->start};
}

struct PlacementCase {
  std::string name;
  Node node;
  Pod pod;
  MigPartitionArgs args;
  Placed want;
};

TEST(MigPartitionChoice, EachPodGetsTheInstanceThatKeepsTheMostUsefulGeometry) {
  MigPartitionArgs only_small;  // nothing but 1g.10gb pods expected
  only_small.default_weight = 0;
  only_small.profile_mix = {{"1g.10gb", 1}};
  const std::vector<PlacementCase> cases = {
      {"a 1g pod goes beside other 1g pods rather than into an untouched GPU",
       Node("n").Gpus(2).Mig(0, SevenSmall()).Mig(1, SevenSmall()).HoldMig(0, 0).HoldMig(0, 1).HoldMig(0, 2),
       Pod().MigProfile("1g.10gb"), {}, {.gpu = 0, .start = 3}},
      {"on an untouched GPU a 1g pod takes the last slice, which breaks the fewest larger instances",
       Node("n").Gpus(1).Mig(0, SevenSmall()), Pod().MigProfile("1g.10gb"), {}, {.gpu = 0, .start = 6}},
      {"with only 1g pods expected every slice is as good and the lowest is taken",
       Node("n").Gpus(1).Mig(0, SevenSmall()), Pod().MigProfile("1g.10gb"), only_small, {.gpu = 0, .start = 0}},
      {"a held instance is never given again", Node("n").Gpus(1).Mig(0, MigInstances("3g.40gb", {0, 4})).HoldMig(0, 0),
       Pod().MigProfile("3g.40gb"), {}, {.gpu = 0, .start = 4}},
      {"a pod gets an instance of exactly its profile, not a larger one",
       Node("n").Gpus(1).Mig(0, Join(MigInstances("3g.40gb", {0}), MigInstances("1g.10gb", {4, 5, 6}))),
       Pod().MigProfile("1g.10gb"), {}, {.gpu = 0, .start = 6}},
      {"an A100-40GB's profiles are its own: 3g.20gb", Node("n").Gpus(1, kA100_40, 40960).Mig(0, MigInstances("3g.20gb", {4})),
       Pod().MigProfile("3g.20gb"), {}, {.gpu = 0, .start = 4}},
      {"the shared GPUs beside MIG GPUs are never a MIG pod's", Node("n").Gpus(2).Mig(1, MigInstances("7g.80gb", {0})),
       Pod().MigProfile("7g.80gb"), {}, {.gpu = 1, .start = 0}},
      {"an unhealthy GPU's instances are skipped",
       Node("n").Gpus(2).Mig(0, SevenSmall()).Mig(1, SevenSmall()).HoldMig(0, 0).Unhealthy(0),
       Pod().MigProfile("1g.10gb"), {}, {.gpu = 1, .start = 6}},
      {"a GPU of a refused model is skipped",
       Node("n").Gpus(1, kA100_40, 40960).Gpus(1).Mig(0, MigInstances("1g.5gb", {0})).Mig(1, SevenSmall()),
       Pod().MigProfile("1g.10gb").ExcludeModels({"NVIDIA-A100-SXM4-40GB"}), {}, {.gpu = 1, .start = 6}},
  };
  for (const PlacementCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PlaceOn(MigPartitionPlugin(c.args), c.node, c.pod), c.want);
  }
}

struct FilterCase {
  std::string name;
  Node node;
  Pod pod;
  FilterCode code;
  std::string reason_code;
  std::string message_part;
};

TEST(MigPartitionFilter, EveryRefusalSaysWhyAndWhetherPreemptionCouldHelp) {
  const std::vector<FilterCase> cases = {
      {"a free instance of the profile passes", Node("n").Gpus(1).Mig(0, SevenSmall()), Pod().MigProfile("1g.10gb"),
       FilterCode::kSuccess, "", ""},
      {"a node without GPUs in MIG mode is never", Node("n").Gpus(8), Pod().MigProfile("1g.10gb"),
       FilterCode::kUnschedulableUnresolvable, "no_mig_gpus", "the node has no GPU in MIG mode"},
      {"a profile of another model is never and names what the GPU is", Node("n").Gpus(1).Mig(0, SevenSmall()),
       Pod().MigProfile("3g.20gb"), FilterCode::kUnschedulableUnresolvable, "mig_profile_not_offered",
       "GPU 0 (A100-80GB) offers no 3g.20gb"},
      {"a model without a MIG table is never", Node("n").Gpus(1, testing::kT4, 15360).Mig(0),
       Pod().MigProfile("1g.10gb"), FilterCode::kUnschedulableUnresolvable, "mig_profile_not_offered",
       "without a MIG table"},
      {"an unhealthy GPU is named", Node("n").Gpus(1).Mig(0, SevenSmall()).Unhealthy(0), Pod().MigProfile("1g.10gb"),
       FilterCode::kUnschedulableUnresolvable, "mig_profile_not_offered", "GPU 0 is unhealthy"},
      {"a refused model is named", Node("n").Gpus(1).Mig(0, SevenSmall()), Pod().MigProfile("1g.10gb").Models({"H100*"}),
       FilterCode::kUnschedulableUnresolvable, "mig_profile_not_offered", "a model the pod refuses"},
      {"a GPU whose instances the inventory does not list is named", Node("n").Gpus(1).MigUnlisted(0),
       Pod().MigProfile("1g.10gb"), FilterCode::kUnschedulableUnresolvable, "mig_profile_not_offered",
       "GPU 0 is in MIG mode but its inventory does not list its instances"},
      {"no instance of the profile is never: only re-partitioning helps, not preemption",
       Node("n").Gpus(1).Mig(0, MigInstances("7g.80gb", {0})), Pod().MigProfile("1g.10gb"),
       FilterCode::kUnschedulableUnresolvable, "no_mig_instance", "no 1g.10gb instance exists"},
      {"every instance held is not now: preemption could free one",
       Node("n").Gpus(1).Mig(0, MigInstances("3g.40gb", {0, 4})).HoldMig(0, 0).HoldMig(0, 4),
       Pod().MigProfile("3g.40gb"), FilterCode::kUnschedulable, "mig_instances_held",
       "all 2 3g.40gb instances are held by other pods"},
  };
  const MigPartitionPlugin plugin(MigPartitionArgs{});
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    const FilterVerdict v = plugin.FilterGpus(CycleState(c.pod), c.node.View());
    EXPECT_EQ(v.code, c.code) << v.message;
    EXPECT_EQ(v.reason_code, c.reason_code);
    EXPECT_THAT(v.message, HasSubstr(c.message_part));
    // Filter and choice agree: a node passes exactly when an instance is chosen.
    EXPECT_EQ(v.ok(), plugin.ChooseGpus(CycleState(c.pod), c.node.View()).has_value());
  }
}

TEST(MigPartitionShares, TheAssignmentNamesTheInstanceAndCountsItsComputeAndMemory) {
  const MigPartitionPlugin plugin(MigPartitionArgs{});
  const Node node = Node("n").Gpus(1).Mig(0, MigInstances("3g.40gb", {0, 4})).HoldMig(0, 0);
  const CycleState cycle(Pod().MigProfile("3g.40gb"));
  const NodeView view = node.View();
  GpuChoice choice;
  choice.gpu_indices.push_back(0);
  const std::vector<GpuShare> shares = plugin.SharesFor(cycle, view, choice);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].uuid, "GPU-n-0");
  EXPECT_EQ(shares[0].guaranteed, MilliGpu(428)) << "3 of 7 compute slices, rounded down";
  EXPECT_EQ(shares[0].limit, MilliGpu(428));
  EXPECT_EQ(shares[0].memory, MemoryMiB(40960));
  ASSERT_TRUE(shares[0].mig.has_value());
  EXPECT_EQ(*shares[0].mig, (MigInstance{.profile = "3g.40gb", .start = 4, .uuid = "MIG-3g.40gb-4"}));
}

TEST(MigPartitionScore, ANodeWhereThePodBreaksLessScoresHigher) {
  const MigPartitionPlugin plugin(MigPartitionArgs{});
  const Pod pod = Pod().MigProfile("1g.10gb");
  const CycleState cycle(pod);
  const Node packed = Node("packed").Gpus(1).Mig(0, SevenSmall()).HoldMig(0, 0).HoldMig(0, 1).HoldMig(0, 2);
  const Node untouched = Node("untouched").Gpus(1).Mig(0, SevenSmall());
  const NodeView a = packed.View();
  const std::optional<GpuChoice> on_packed = plugin.ChooseGpus(cycle, a);
  const NodeView b = untouched.View();
  const std::optional<GpuChoice> on_untouched = plugin.ChooseGpus(cycle, b);
  ASSERT_TRUE(on_packed.has_value() && on_untouched.has_value());
  std::vector<int64_t> scores = {plugin.ScoreNode(cycle, a, *on_packed), plugin.ScoreNode(cycle, b, *on_untouched)};
  EXPECT_EQ(scores[0], *on_packed->chooser_score) << "the chooser's score is ScoreNode's";
  plugin.NormalizeScores(absl::MakeSpan(scores));
  EXPECT_EQ(scores, (std::vector<int64_t>{100, 0}));
}

TEST(MigGeometryLossTest, TakingASliceCostsEveryProfileThatCouldNoLongerBeMade) {
  const MigGeometry& a100 = *FindMigGeometry("NVIDIA-A100-SXM4-80GB");
  const std::vector<int64_t> ones(a100.profiles.size(), 1);
  // An untouched GPU: slice 6 costs a 1g, a 1g.20gb (6-7), a 3g (4-7) and the 7g;
  // slice 0 costs those and a 2g (0-1) and the 4g (0-3) too.
  EXPECT_EQ(MigGeometryLoss(a100, ones, 0, 0b0100'0000), 4);
  EXPECT_EQ(MigGeometryLoss(a100, ones, 0, 0b0000'0001), 6);
  // Slices 0-2 held: slice 3 costs only its own 1g.
  EXPECT_EQ(MigGeometryLoss(a100, ones, 0b0000'0111, 0b0000'1000), 1);
}

TEST(MigPartitionArgsTest, AProfileMixNamesKnownProfilesWithWeights) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("profileMix: {1g.10gb: 60, 3g.40gb: 40}\ndefaultWeight: 0");
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(MigPartitionPlugin::New(*args).ok());

  struct Case {
    std::string name;
    std::string yaml;
    std::string error_part;
  };
  const std::vector<Case> cases = {
      {"an unknown profile", "profileMix: {9g.90gb: 1}", "args.profileMix: \"9g.90gb\" is no MIG profile"},
      {"a weight out of range", "profileMix: {1g.10gb: 5000}", "args.profileMix.1g.10gb: must be an integer in 0..1000"},
      {"a list instead of a map", "profileMix: [1g.10gb]", "args.profileMix: must be a map of names to integers"},
      {"an unknown field", "profileWeights: {}", "args.profileWeights: unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<PluginArgs> bad = PluginArgs::FromText(c.yaml);
    ASSERT_TRUE(bad.ok());
    absl::StatusOr<std::unique_ptr<Plugin>> plugin = MigPartitionPlugin::New(*bad);
    ASSERT_FALSE(plugin.ok());
    EXPECT_THAT(std::string(plugin.status().message()), HasSubstr(c.error_part));
  }
}

// gpu-share and mig-partition in one profile, as a policy file pairs them.
std::shared_ptr<const Profile> MixedProfile() {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  plugins.push_back({std::make_unique<MigPartitionPlugin>(MigPartitionArgs{}), 1});
  return *Profile::Create(std::move(plugins));
}

TEST(MigAndSharesInOneProfile, EachKindOfPodKeepsToItsOwnGpus) {
  const std::shared_ptr<const Profile> profile = MixedProfile();
  const Node node = Node("n").Gpus(2).Mig(0, SevenSmall());
  const NodeView view = node.View();

  const CycleState share(Pod().Fraction(250));
  const std::optional<GpuChoice> for_share = profile->ChooseGpus(share, view);
  ASSERT_TRUE(for_share.has_value());
  EXPECT_EQ(for_share->gpu_indices, (absl::InlinedVector<int32_t, 8>{1})) << "the share goes to the shared GPU";

  const CycleState mig(Pod().MigProfile("1g.10gb"));
  const std::optional<GpuChoice> for_mig = profile->ChooseGpus(mig, view);
  ASSERT_TRUE(for_mig.has_value());
  EXPECT_EQ(for_mig->gpu_indices, (absl::InlinedVector<int32_t, 8>{0}));
  const std::vector<GpuShare> shares = profile->SharesFor(mig, view, *for_mig);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_TRUE(shares[0].mig.has_value());

  const Node only_mig = Node("m").Gpus(1).Mig(0, SevenSmall());
  EXPECT_EQ(profile->Filter(share, only_mig.View()).reason_code, "gpus_in_mig_mode");
  const Node only_shared = Node("s").Gpus(1);
  EXPECT_EQ(profile->Filter(mig, only_shared.View()).reason_code, "no_mig_gpus");
}

TEST(MigAndSharesInOneProfile, ScoresForAMigPodComeFromTheMigChooserOnly) {
  const std::shared_ptr<const Profile> profile = MixedProfile();
  const Node packed = Node("packed").Gpus(1).Mig(0, SevenSmall()).HoldMig(0, 0).HoldMig(0, 1).HoldMig(0, 2);
  const Node untouched = Node("untouched").Gpus(1).Mig(0, SevenSmall());
  const std::vector<NodeView> views = {untouched.View(), packed.View()};
  const std::vector<int64_t> wire = profile->Score(CycleState(Pod().MigProfile("1g.10gb")), testing::Pointers(views),
                                                   nullptr);
  ASSERT_EQ(wire.size(), 2u);
  EXPECT_LT(wire[0], wire[1]) << "the packed node is better for a 1g pod";
  EXPECT_EQ(wire[1], kMaxWireScore);
}

TEST(MigAndSharesInOneProfile, AProfileWithoutAMigChooserRefusesMigPodsSayingSo) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  const std::shared_ptr<const Profile> profile = *Profile::Create(std::move(plugins));
  const FilterVerdict v = profile->Filter(CycleState(Pod().MigProfile("1g.10gb")), Node("n").Gpus(1).Mig(0, SevenSmall()).View());
  EXPECT_EQ(v.code, FilterCode::kUnschedulableUnresolvable);
  EXPECT_EQ(v.reason_code, "no_mig_placement");
  EXPECT_THAT(v.message, HasSubstr("mig-partition"));
}

// A second plugin that places MIG instances, under another name.
class AnotherMigChooser final : public tessera::Plugin, public GpuChooserPlugin {
 public:
  AnotherMigChooser() : Plugin(/*memoizable=*/true) {}
  [[nodiscard]] std::string_view Name() const override { return "another-mig"; }
  [[nodiscard]] GpuRequestKind Places() const override { return GpuRequestKind::kMigInstance; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override {}
};

TEST(MigAndSharesInOneProfile, TwoMigChoosersAreRefused) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  plugins.push_back({std::make_unique<MigPartitionPlugin>(MigPartitionArgs{}), 1});
  plugins.push_back({std::make_unique<AnotherMigChooser>(), 1});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  ASSERT_FALSE(profile.ok());
  EXPECT_THAT(std::string(profile.status().message()), HasSubstr("one plugin that places MIG instances"));
}

}  // namespace
}  // namespace tessera
