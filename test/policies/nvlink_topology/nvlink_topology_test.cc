#include "policies/nvlink_topology/nvlink_topology.h"

#include <bit>
#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"
#include "policies/builtin_registry.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/profile.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_set_search.h"
#include "test/testing/builders.h"
#include "test/testing/topologies.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::Node;
using testing::ParseTopology;
using testing::Pod;

constexpr char kV100[] = "Tesla-V100-SXM2-16GB";

// The plugin `name` of the built-in registry, built from `args` (YAML) as a policy file's entry would be.
WeightedPlugin Built(const std::string& name, std::string_view args, int64_t weight = 1) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<PluginArgs> parsed = PluginArgs::FromText(args);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::unique_ptr<Plugin>> plugin = (*registry.Find(name))(*parsed);
  EXPECT_TRUE(plugin.ok()) << plugin.status();
  return {plugin.ok() ? std::shared_ptr<const Plugin>(*std::move(plugin)) : nullptr, weight};
}

// gpu-share (binpack) and nvlink-topology with `nvlink_args`, as a policy file has them.
std::shared_ptr<const Profile> TopologyProfile(std::string_view nvlink_args = "{}", int64_t nvlink_weight = 1) {
  std::vector<WeightedPlugin> plugins = {Built("gpu-share", "{gpuStrategy: binpack}"),
                                         Built("nvlink-topology", nvlink_args, nvlink_weight)};
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : nullptr;
}

std::shared_ptr<const Profile> GpuShareOnlyProfile() {
  std::vector<WeightedPlugin> plugins = {Built("gpu-share", "{gpuStrategy: binpack}")};
  return *Profile::Create(std::move(plugins));
}

Node Dgx1(std::string name = "dgx1") {
  return std::move(Node(std::move(name)).Gpus(8, kV100, 16384).Topology(ParseTopology(testing::kDgx1V100)));
}
Node DgxA100(std::string name = "a100") {
  return std::move(Node(std::move(name)).Gpus(8).Topology(ParseTopology(testing::kDgxA100)));
}
Node Pcie8(std::string name = "pcie") {
  return std::move(Node(std::move(name)).Gpus(8, testing::kT4, 15360).Topology(ParseTopology(testing::kPcie8TwoSockets)));
}

std::vector<int32_t> Chosen(const Profile& profile, const PodGpuRequest& pod, const Node& node) {
  std::optional<GpuChoice> choice = profile.ChooseGpus(CycleState(pod), node.View());
  if (!choice.has_value()) return {};
  return {choice->gpu_indices.begin(), choice->gpu_indices.end()};
}

struct ChoiceCase {
  std::string name;
  Node node;
  Pod pod;
  std::vector<int32_t> want;
};

TEST(NvlinkTopologyChoice, PicksTheBestConnectedGpus) {
  const std::vector<ChoiceCase> cases = {
      {"DGX-1: a 2-GPU pod gets a double-NVLink pair", Dgx1(), Pod().Count(2), {0, 3}},
      {"DGX-1: a 4-GPU pod gets a quad NVLinked pair by pair", Dgx1(), Pod().Count(4), {0, 1, 2, 3}},
      {"DGX-1: with GPU1 taken the 4-GPU pod gets the other quad", Dgx1().Hold(1, 1000), Pod().Count(4),
       {4, 5, 6, 7}},
      {"DGX-1: with GPUs 3 and 4 taken a 2-GPU pod gets the first double link left", Dgx1().Hold(3, 1000).Hold(4, 1000),
       Pod().Count(2), {1, 2}},
      {"DGX-1: with only single links left, the best remaining pair",
       Dgx1().Hold(0, 1000).Hold(2, 1000).Hold(5, 1000).Hold(7, 1000), Pod().Count(2), {1, 3}},
      {"DGX-1: a fractional 2-GPU pod pairs the binpacked GPU over its double link",
       Dgx1().Hold(0, 700).Hold(3, 700).Hold(6, 300), Pod().Count(2).Fraction(500), {6, 5}},
      {"NVSwitch: any free set, gpu-share's own (binpack)", DgxA100().Hold(2, 500).Hold(5, 250),
       Pod().Count(2).Fraction(250), {2, 5}},
      {"NVSwitch: whole GPUs in index order", DgxA100().Hold(0, 100), Pod().Count(4), {1, 2, 3, 4}},
      {"PCIe: a 2-GPU pod gets two GPUs on one switch", Pcie8().Hold(0, 1000).Hold(2, 1000), Pod().Count(2), {4, 5}},
      {"PCIe: a 4-GPU pod stays on one socket", Pcie8().Hold(1, 1000), Pod().Count(4), {4, 5, 6, 7}},
      {"PCIe: an idle node gives the first socket", Pcie8(), Pod().Count(4), {0, 1, 2, 3}},
      {"a single-GPU pod keeps the intact quad of a DGX-1", Dgx1().Hold(5, 1000).Hold(6, 1000).Hold(7, 1000), Pod(),
       {4}},
      {"a single-GPU pod keeps a PCIe socket whole", Pcie8().Hold(5, 1000).Hold(6, 1000).Hold(7, 1000), Pod(), {4}},
      {"a single-GPU pod on an idle node takes the first GPU", Dgx1(), Pod(), {0}},
      {"gpu-share's binpack comes before the topology", Dgx1().Hold(5, 1000).Hold(6, 1000).Hold(7, 1000).Hold(1, 250),
       Pod().Fraction(250), {1}},
      {"no topology: gpu-share's choice", Node("plain").Gpus(8).Hold(0, 1000), Pod().Count(2), {1, 2}},
      {"a bad topology: gpu-share's choice", Node("bad").Gpus(8).TopologyError("broken").Hold(1, 1000), Pod().Count(2),
       {0, 2}},
  };
  const std::shared_ptr<const Profile> profile = TopologyProfile();
  ASSERT_NE(profile, nullptr);
  for (const ChoiceCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(Chosen(*profile, c.pod, c.node), ElementsAreArray(c.want));
  }
}

TEST(NvlinkTopologyChoice, OnDgx1NeverPairsGpu0WithGpu6WhileAnNvlinkPairIsFree) {
  const std::shared_ptr<const Profile> profile = TopologyProfile();
  // GPU0 first for gpu-share (partly used), GPU6 next: still an NVLink pair.
  const Node node = Dgx1().Hold(0, 500).Hold(6, 500).Hold(1, 1000).Hold(2, 1000).Hold(3, 1000).Hold(4, 1000);
  const std::vector<int32_t> got = Chosen(*profile, Pod().Count(2).Fraction(250), node);
  EXPECT_THAT(got, ElementsAre(6, 5));
  EXPECT_THAT(Chosen(*GpuShareOnlyProfile(), Pod().Count(2).Fraction(250), node), ElementsAre(0, 6))
      << "what gpu-share alone would do";
}

TEST(NvlinkTopologyChoice, SingleGpuTieBreakCanBeTurnedOff) {
  const Node node = Dgx1().Hold(5, 1000).Hold(6, 1000).Hold(7, 1000);
  EXPECT_THAT(Chosen(*TopologyProfile("{protectFreeSets: false}"), Pod(), node), ElementsAre(0));
  EXPECT_THAT(Chosen(*TopologyProfile("{protectFreeSets: true}"), Pod(), node), ElementsAre(4));
}

// The plugin's choice, checked against brute force over the GPUs gpu-share
// says can take the pod, on random states of the 8-GPU references.
TEST(NvlinkTopologyChoice, IsTheBestSetAmongTheGpusThatFitInRandomStates) {
  const std::shared_ptr<const Profile> profile = TopologyProfile();
  const GpuSharePlugin gpu_share(GpuShareArgs{});
  std::mt19937 rng(4242);
  int compared = 0;
  for (std::string_view text : {testing::kDgx1V100, testing::kPcie8TwoSockets, testing::kBridged4Gpu}) {
    const std::shared_ptr<const GpuTopology> topology = ParseTopology(text);
    ASSERT_NE(topology, nullptr);
    for (int trial = 0; trial < 300; ++trial) {
      Node node("n");
      node.Gpus(topology->gpu_count(), kV100, 16384).Topology(topology);
      for (int32_t g = 0; g < topology->gpu_count(); ++g) {
        if (rng() % 3 == 0) node.Hold(g, 100 * static_cast<int64_t>(1 + rng() % 10));
      }
      Pod pod;
      pod.Count(2 + static_cast<int32_t>(rng() % static_cast<uint32_t>(topology->gpu_count() - 1)));
      if (rng() % 2 == 0) pod.Fraction(100 * static_cast<int64_t>(1 + rng() % 6));
      const RankedGpus ranked_gpus = testing::Ranked(gpu_share, CycleState(pod), node.View());
      const RankedGpus* ranked = &ranked_gpus;
      const std::optional<GpuChoice> choice = profile->ChooseGpus(CycleState(pod), node.View());
      if (ranked->size() < static_cast<size_t>(pod.request().count)) {
        EXPECT_FALSE(choice.has_value());
        continue;
      }
      ASSERT_TRUE(choice.has_value());
      // Brute force: every subset of the ranked GPUs of the pod's size.
      const auto m = static_cast<uint32_t>(ranked->size());
      GpuSetQuality best_quality;
      uint32_t best_ranks = 0;
      for (uint32_t ranks = 0; ranks < (1u << m); ++ranks) {
        if (std::popcount(ranks) != pod.request().count) continue;
        GpuMask gpus = 0;
        for (uint32_t r = 0; r < m; ++r) {
          if ((ranks >> r & 1u) != 0) gpus |= GpuMask{1} << (*ranked)[r].index;
        }
        const GpuSetQuality q = QualityOf(*topology, gpus);
        // Ties: the set whose lowest differing rank is its own comes first.
        const uint32_t diff = ranks ^ best_ranks;
        if (best_ranks == 0 || q > best_quality || (q == best_quality && (ranks & diff & -diff) != 0)) {
          best_quality = q;
          best_ranks = ranks;
        }
      }
      std::vector<int32_t> want;
      for (uint32_t r = 0; r < m; ++r) {
        if ((best_ranks >> r & 1u) != 0) want.push_back((*ranked)[r].index);
      }
      ASSERT_THAT(std::vector<int32_t>(choice->gpu_indices.begin(), choice->gpu_indices.end()),
                  ElementsAreArray(want))
          << "trial " << trial;
      ++compared;
    }
  }
  EXPECT_GT(compared, 400) << "most random states must leave room for the pod";
}

TEST(NvlinkTopologyScore, RatesTheSetAgainstWhatAnIdleNodeOffers) {
  const NvlinkTopologyPlugin plugin(NvlinkTopologyArgs{});
  const Node dgx1 = Dgx1();
  auto score = [&](const Node& node, std::vector<int32_t> gpus) {
    GpuChoice choice;
    for (int32_t g : gpus) choice.gpu_indices.push_back(g);
    return plugin.ScoreNode(CycleState(Pod().Count(static_cast<int32_t>(gpus.size()))), node.View(), choice);
  };
  EXPECT_EQ(score(dgx1, {0, 3}), 100) << "a double NVLink: the best pair there is";
  EXPECT_EQ(score(dgx1, {1, 3}), 50) << "a single NVLink: half the bottleneck and half the total";
  EXPECT_EQ(score(dgx1, {0, 6}), 16) << "SYS: 8000 of 50000 MB/s";
  EXPECT_EQ(score(dgx1, {0, 1, 2, 3}), 100);
  EXPECT_EQ(score(dgx1, {4, 5, 6, 7}), 100) << "the other quad is as good";
  EXPECT_LT(score(dgx1, {0, 1, 2, 4}), 50);
  EXPECT_EQ(score(Pcie8(), {0, 1}), 100) << "relative to its own idle best: a PIX pair";
  EXPECT_EQ(score(Node("plain").Gpus(8), {0, 1}), 0) << "no topology, nothing to vouch for";
  EXPECT_EQ(score(dgx1, {5}), 100) << "one GPU has no link to rate";
}

TEST(NvlinkTopologyScore, PrioritizeRanksTheBetterConnectedNodeFirst) {
  const std::shared_ptr<const Profile> profile = TopologyProfile("{}", 10);
  const std::vector<Node> nodes = {Dgx1("fragmented").Hold(0, 1000).Hold(2, 1000).Hold(5, 1000).Hold(7, 1000),
                                   Dgx1("idle"), Node("unknown").Gpus(8)};
  std::vector<NodeView> views;
  for (const Node& n : nodes) views.push_back(n.View());
  std::vector<std::optional<GpuChoice>> choices;
  const std::vector<int64_t> scores = profile->Score(CycleState(Pod().Count(2)), testing::Pointers(views), &choices);
  EXPECT_GT(scores[1], scores[0]) << "idle offers a double link, fragmented only single ones";
  EXPECT_GT(scores[0], scores[2]);
  // Bind asks ChooseGpus again: it must give the set prioritize scored.
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(choices[i], profile->ChooseGpus(CycleState(Pod().Count(2)), views[i])) << nodes[i].name();
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

TEST(NvlinkTopologyFilter, RequireNvlinkRejectsWithAPreciseReason) {
  const std::vector<FilterCase> cases = {
      {"an idle DGX-1 has NVLink pairs", Dgx1(), Pod().Count(2), FilterCode::kSuccess, "", ""},
      {"a PCIe node never has NVLink", Pcie8(), Pod().Count(2), FilterCode::kUnschedulableUnresolvable,
       "no_nvlink_set",
       "no 2 GPUs of this node are joined by NVLink (nvlink-topology requireNvlink): even idle, its best set (GPUs "
       "0,1) has slowest link GPU0-GPU1 PIX, 16000 MB/s"},
      {"a DGX-1 whose free GPUs are joined by SYS only is not now",
       Dgx1().Hold(1, 1000).Hold(2, 1000).Hold(3, 1000).Hold(4, 1000).Hold(5, 1000).Hold(6, 1000), Pod().Count(2),
       FilterCode::kUnschedulable, "no_nvlink_set_free",
       "the best 2 GPUs that can take the pod now (GPUs 0,7) have no NVLink between them, slowest link GPU0-GPU7 "
       "SYS, 8000 MB/s"},
      {"an unknown topology is never", Node("plain").Gpus(8), Pod().Count(2), FilterCode::kUnschedulableUnresolvable,
       "gpu_topology_unknown", "the node's GPU topology is unknown: no tessera.io/gpu-topology annotation"},
      {"a bad topology says why", Node("bad").Gpus(8).TopologyError("annotation tessera.io/gpu-topology: no row for GPU7"),
       Pod().Count(2), FilterCode::kUnschedulableUnresolvable, "gpu_topology_unknown", "no row for GPU7"},
      {"a single-GPU pod needs no link", Pcie8(), Pod(), FilterCode::kSuccess, "", ""},
      {"gpu-share's rejection comes first", Dgx1().Hold(0, 1000).Hold(1, 1000).Hold(2, 1000).Hold(3, 1000)
           .Hold(4, 1000).Hold(5, 1000).Hold(6, 1000),
       Pod().Count(2), FilterCode::kUnschedulable, "insufficient_gpu", "1 of the 2 GPUs"},
  };
  const std::shared_ptr<const Profile> profile = TopologyProfile("{requireNvlink: true}");
  ASSERT_NE(profile, nullptr);
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    const FilterVerdict v = profile->Filter(CycleState(c.pod), c.node.View());
    EXPECT_EQ(v.code, c.code) << v.message;
    EXPECT_EQ(v.reason_code, c.reason_code);
    EXPECT_THAT(v.message, HasSubstr(c.message_part));
  }
  // Off by default: the PCIe node passes.
  EXPECT_TRUE(TopologyProfile()->Filter(CycleState(Pod().Count(2)), Pcie8().View()).ok());
}

TEST(NvlinkTopologyProfile, WithoutThePluginChoicesAreGpuSharesOwn) {
  const std::shared_ptr<const Profile> alone = GpuShareOnlyProfile();
  const GpuSharePlugin gpu_share(GpuShareArgs{});
  const std::vector<Node> nodes = {Dgx1().Hold(0, 500).Hold(6, 300), Pcie8().Hold(3, 1000), DgxA100()};
  for (const Node& n : nodes) {
    for (const Pod& pod : {Pod(), Pod().Count(2), Pod().Count(3).Fraction(250)}) {
      EXPECT_EQ(alone->ChooseGpus(CycleState(pod), n.View()), gpu_share.ChooseGpus(CycleState(pod), n.View())) << n.name();
      // RankGpus begins with exactly that choice.
      const RankedGpus ranked_gpus = testing::Ranked(gpu_share, CycleState(pod), n.View());
      const RankedGpus* ranked = &ranked_gpus;
      const std::optional<GpuChoice> choice = gpu_share.ChooseGpus(CycleState(pod), n.View());
      ASSERT_TRUE(choice.has_value());
      for (size_t i = 0; i < choice->gpu_indices.size(); ++i) EXPECT_EQ((*ranked)[i].index, choice->gpu_indices[i]);
    }
  }
}

// A second plugin that picks GPU sets, to show a profile takes one only.
class OtherSetPicker final : public Plugin, public GpuSetChooserPlugin {
 public:
  OtherSetPicker() : Plugin(/*memoizable=*/true) {}
  std::string_view Name() const override { return "other-sets"; }
  std::optional<GpuChoice> ChooseGpuSet(const CycleState&, const NodeView&, const RankedGpus&) const override {
    return std::nullopt;
  }
};

TEST(NvlinkTopologyProfile, AProfileTakesOneSetPlugin) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<GpuSharePlugin>(GpuShareArgs{}), 1});
  plugins.push_back({std::make_unique<NvlinkTopologyPlugin>(NvlinkTopologyArgs{}), 1});
  plugins.push_back({std::make_unique<OtherSetPicker>(), 1});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  ASSERT_FALSE(profile.ok());
  EXPECT_THAT(std::string(profile.status().message()), HasSubstr("one plugin that picks the set of GPUs"));
}

TEST(NvlinkTopologyArgs, AreValidated) {
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("requireNvlink: maybe\nprotectFreeSets: true\nbandwidth: 3\n");
  ASSERT_TRUE(args.ok());
  absl::StatusOr<std::unique_ptr<Plugin>> plugin = NvlinkTopologyPlugin::New(*args);
  ASSERT_FALSE(plugin.ok());
  EXPECT_THAT(std::string(plugin.status().message()), HasSubstr("args.requireNvlink"));
  EXPECT_THAT(std::string(plugin.status().message()), HasSubstr("args.bandwidth"));

  absl::StatusOr<PluginArgs> defaults = PluginArgs::FromText("");
  ASSERT_TRUE(defaults.ok());
  absl::StatusOr<std::unique_ptr<Plugin>> fine = NvlinkTopologyPlugin::New(*defaults);
  ASSERT_TRUE(fine.ok()) << fine.status();
  const auto& nvlink = dynamic_cast<const NvlinkTopologyPlugin&>(**fine);
  EXPECT_FALSE(nvlink.args().require_nvlink);
  EXPECT_TRUE(nvlink.args().protect_free_sets);
}

}  // namespace
}  // namespace tessera
