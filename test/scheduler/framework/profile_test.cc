#include "scheduler/framework/profile.h"

#include <algorithm>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "test/testing/builders.h"
#include "test/testing/recording_reserver.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

// Ranks the node's first GPU; rejects nodes named "full" (not now) and "never".
class FakeChooser final : public Plugin, public GpuChooserPlugin {
 public:
  FakeChooser() : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "chooser"; }
  void RankGpus(const CycleState&, const NodeView& n, RankedGpus& ranked) const override {
    if (n.gpus.empty() || n.name == "full") return;
    ranked.push_back(RankedGpu{.index = n.gpus.front().index, .tier = 0});
  }
  FilterVerdict FilterGpus(const CycleState&, const NodeView& n) const override {
    if (n.name == "never") return FilterVerdict::Never("never", "chooser says never");
    return FilterVerdict::Success();
  }
};

// Rejects everything with its own reason: shows that the first rejection wins.
class FakeRejecter final : public Plugin, public NodeFilterPlugin {
 public:
  FakeRejecter() : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "rejecter"; }
  FilterVerdict FilterNode(const CycleState&, const NodeView&) const override {
    return FilterVerdict::NotNow("rejected", "rejecter says no");
  }
};

// Scores a node by its GPU count × 10.
class FakeScore final : public Plugin, public ScorePlugin {
 public:
  explicit FakeScore(std::string name) : Plugin(/*memoizable=*/false), name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  int64_t ScoreNode(const CycleState&, const NodeView& n, const GpuChoice&) const override {
    return static_cast<int64_t>(n.gpus.size()) * 10;
  }

 private:
  std::string name_;
};

// Plugins that implement one point each and answer nothing: for Create's checks.
class Named : public Plugin {
 public:
  explicit Named(std::string name) : Plugin(/*memoizable=*/false), name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }

 private:
  std::string name_;
};
class NoPoint final : public Named {
 public:
  using Named::Named;
};
class AnotherChooser final : public Named, public GpuChooserPlugin {
 public:
  using Named::Named;
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override {}
};
class SetChooser final : public Named, public GpuSetChooserPlugin {
 public:
  using Named::Named;
  std::optional<GpuChoice> ChooseGpuSet(const CycleState&, const NodeView&, const RankedGpus&) const override {
    return std::nullopt;
  }
};
class SetFilterAlone final : public Named, public GpuSetFilterPlugin {
 public:
  using Named::Named;
  FilterVerdict FilterGpuSet(const CycleState&, const NodeView&, const GpuChoice&) const override {
    return FilterVerdict::Success();
  }
};
class NormalizerAlone final : public Named, public NormalizeScorePlugin {
 public:
  using Named::Named;
  void NormalizeScores(absl::Span<int64_t>) const override {}
};
class ChooserOfNothing final : public Named, public GpuChooserPlugin {
 public:
  using Named::Named;
  GpuRequestKind Places() const override { return GpuRequestKind::kNone; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override {}
};

const CycleState& WholeGpu() {
  static const CycleState cycle{PodGpuRequest{}};
  return cycle;
}

std::vector<const NodeView*> Pointers(const std::vector<NodeView>& views) {
  std::vector<const NodeView*> out;
  for (const NodeView& v : views) out.push_back(&v);
  return out;
}

std::vector<WeightedPlugin> Plugins(std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> list) {
  std::vector<WeightedPlugin> out;
  for (auto& [p, w] : list) out.push_back({std::move(p), w});
  return out;
}

TEST(Profile, CreateRefusesBadCombinations) {
  struct Case {
    std::string name;
    std::function<std::vector<WeightedPlugin>()> plugins;
    std::string error_part;
  };
  const std::vector<Case> cases = {
      {"no plugins", [] { return std::vector<WeightedPlugin>{}; }, "at least one plugin"},
      {"no GPU chooser",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeScore>("s"), 1);
         return Plugins(std::move(l));
       },
       "exactly one plugin that chooses GPUs"},
      {"the same plugin twice",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<FakeScore>("chooser"), 1);
         return Plugins(std::move(l));
       },
       "appears twice"},
      {"a weight out of range",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 0);
         return Plugins(std::move(l));
       },
       "weight must be 1..100"},
      {"two GPU choosers",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<AnotherChooser>("another"), 1);
         return Plugins(std::move(l));
       },
       "exactly one plugin that chooses GPUs (such as gpu-share); found 2"},
      {"two GPU set choosers",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<SetChooser>("set-a"), 1);
         l.emplace_back(std::make_unique<SetChooser>("set-b"), 1);
         return Plugins(std::move(l));
       },
       "one plugin that picks the set of GPUs"},
      {"a GPU set filter that does not choose sets",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<SetFilterAlone>("set-filter"), 1);
         return Plugins(std::move(l));
       },
       "filters GPU sets but does not choose them"},
      {"a normaliser that does not score",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<NormalizerAlone>("normalizer"), 1);
         return Plugins(std::move(l));
       },
       "normalises scores but does not score"},
      {"a plugin that implements no extension point",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<NoPoint>("idle"), 1);
         return Plugins(std::move(l));
       },
       "\"idle\" implements no extension point"},
      {"a chooser for pods that ask for no GPU",
       [] {
         std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
         l.emplace_back(std::make_unique<FakeChooser>(), 1);
         l.emplace_back(std::make_unique<ChooserOfNothing>("nothing"), 1);
         return Plugins(std::move(l));
       },
       "chooses GPUs for pods that ask for none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto profile = Profile::Create(c.plugins());
    ASSERT_FALSE(profile.ok());
    EXPECT_THAT(std::string(profile.status().message()), HasSubstr(c.error_part));
  }
}

TEST(Profile, TheFirstRejectionWins) {
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<FakeChooser>(), 1);
  l.emplace_back(std::make_unique<FakeRejecter>(), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node never("never"), other("other");
  EXPECT_EQ((*profile)->Filter(WholeGpu(), never.View()).message, "chooser says never");
  EXPECT_EQ((*profile)->Filter(WholeGpu(), other.View()).message, "rejecter says no");
}

TEST(Profile, ScoresAreWeighedAtPluginResolutionThenPutOnTheWireAndChoicesAreDeterministic) {
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<FakeChooser>(), 1);
  l.emplace_back(std::make_unique<FakeScore>("a"), 3);
  l.emplace_back(std::make_unique<FakeScore>("b"), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node four = Node("four").Gpus(4), five = Node("five").Gpus(5), six = Node("six").Gpus(6),
             full = Node("full").Gpus(8), none("none");
  const std::vector<NodeView> views = {four.View(), five.View(), six.View(), full.View(), none.View()};
  std::vector<std::optional<GpuChoice>> choices;
  // Sums 160, 200, 240: six is the best (10), four the least good that fits
  // (1), five halfway (1 + 4); full and none do not fit (0).
  EXPECT_THAT((*profile)->Score(WholeGpu(), Pointers(views), &choices), ElementsAre(1, 5, 10, 0, 0));
  ASSERT_EQ(choices.size(), 5u);
  // Bind re-asks the chooser: the same snapshot gives the same GPUs.
  for (size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(views[i].name);
    EXPECT_EQ(choices[i], (*profile)->ChooseGpus(WholeGpu(), views[i]));
  }
  EXPECT_FALSE(choices[3].has_value());
}

// A chooser that scores too, and says what its ScoreNode would say of a
// choice on nodes named "scored": 77 there, where ScoreNode itself gives 33.
class ScoringChooser final : public Plugin, public GpuChooserPlugin, public ScorePlugin {
 public:
  ScoringChooser() : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "scoring-chooser"; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus& ranked) const override {
    ranked.push_back(RankedGpu{.index = 0, .tier = 0});
  }
  std::optional<GpuChoice> ChooseGpus(const CycleState&, const NodeView& n) const override {
    GpuChoice c;
    c.gpu_indices.push_back(0);
    if (n.name == "scored") c.chooser_score = 77;
    return c;
  }
  int64_t ScoreNode(const CycleState&, const NodeView&, const GpuChoice&) const override { return 33; }
};

TEST(Profile, AChoosersOwnScoreOfItsChoiceStandsForItsScoreAndNoOtherPlugins) {
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<ScoringChooser>(), 1);
  l.emplace_back(std::make_unique<FakeScore>("other"), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node scored = Node("scored").Gpus(1), plain = Node("plain").Gpus(1);
  const std::optional<GpuChoice> carried = (*profile)->ChooseGpus(WholeGpu(), scored.View());
  const std::optional<GpuChoice> bare = (*profile)->ChooseGpus(WholeGpu(), plain.View());
  ASSERT_TRUE(carried.has_value() && bare.has_value());
  EXPECT_EQ(*carried, *bare) << "the same GPUs are the same choice, whatever score they carry";
  // Weighed sums (no normaliser): the chooser's 77 carried, not asked again,
  // or its ScoreNode's 33 where it carried none; the other plugin's 10 each.
  const std::vector<NodeView> views = {scored.View(), plain.View()};
  const RunResult run = (*profile)->Run(WholeGpu(), Pointers(views), RunOptions{}, nullptr);
  EXPECT_THAT(run.fitting, ElementsAre(0, 1));
  EXPECT_THAT(run.totals, ElementsAre(77 + 10, 33 + 10));
}

// Implements every point and counts what it is asked: GPU points must not
// be asked about a pod that asks for no GPU.
class EveryPoint final : public Plugin,
                         public NodeFilterPlugin,
                         public GpuChooserPlugin,
                         public GpuExclusionPlugin,
                         public GpuSetChooserPlugin,
                         public GpuSetFilterPlugin,
                         public ScorePlugin {
 public:
  EveryPoint()
      : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "every-point"; }
  FilterVerdict FilterNode(const CycleState&, const NodeView&) const override {
    ++node_filters;
    return FilterVerdict::Success();
  }
  FilterVerdict FilterGpus(const CycleState&, const NodeView&) const override { return Asked(); }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus&) const override { (void)Asked(); }
  std::optional<GpuChoice> ChooseGpus(const CycleState&, const NodeView&) const override {
    (void)Asked();
    return std::nullopt;
  }
  std::vector<GpuShare> SharesFor(const CycleState&, const NodeView&, const GpuChoice&) const override {
    (void)Asked();
    return {GpuShare{}};
  }
  void ExcludeGpus(const CycleState&, const NodeView&, GpuIndexList& excluded) const override {
    (void)Asked();
    excluded.push_back(0);
  }
  FilterVerdict ExplainExcluded(const CycleState&, const NodeView&) const override { return Asked(); }
  std::optional<GpuChoice> ChooseGpuSet(const CycleState&, const NodeView&, const RankedGpus&) const override {
    (void)Asked();
    return std::nullopt;
  }
  FilterVerdict FilterGpuSet(const CycleState&, const NodeView&, const GpuChoice&) const override { return Asked(); }
  int64_t ScoreNode(const CycleState&, const NodeView&, const GpuChoice& choice) const override {
    ++node_scores;
    return choice.gpu_indices.empty() ? 42 : 0;
  }

  mutable int gpu_points = 0, node_filters = 0, node_scores = 0;

 private:
  FilterVerdict Asked() const {
    ++gpu_points;
    return FilterVerdict::Never("asked", "a GPU point was asked");
  }
};

// A profile of one EveryPoint plugin; `*every` points at it.
absl::StatusOr<std::shared_ptr<const Profile>> EveryPointProfile(const EveryPoint** every) {
  auto plugin = std::make_unique<EveryPoint>();
  *every = plugin.get();
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::move(plugin), 1});
  return Profile::Create(std::move(plugins));
}

TEST(Profile, APodThatAsksForNoGpuIsDecidedAtTheTopAndNoGpuPointIsAsked) {
  const EveryPoint* every = nullptr;
  const absl::StatusOr<std::shared_ptr<const Profile>> profile = EveryPointProfile(&every);
  ASSERT_TRUE(profile.ok()) << profile.status();
  const CycleState cpu_only(Pod().Count(0));
  ASSERT_FALSE(cpu_only.wants_gpus());
  const Node node = Node("n").Gpus(2);
  EXPECT_TRUE((*profile)->Filter(cpu_only, node.View()).ok());
  EXPECT_EQ((*profile)->ChooseGpus(cpu_only, node.View()), GpuChoice{});
  EXPECT_TRUE((*profile)->SharesFor(cpu_only, node.View(), GpuChoice{}).empty());
  const std::vector<NodeView> views = {node.View()};
  EXPECT_THAT((*profile)->Score(cpu_only, Pointers(views), nullptr), ElementsAre(kMaxWireScore));
  EXPECT_EQ(every->gpu_points, 0);
  EXPECT_EQ(every->node_filters, 1) << "node filters still see the pod";
  EXPECT_EQ(every->node_scores, 1) << "and so do node scores, with no GPUs chosen";

  // The same plugin is asked its GPU points for a pod that asks for a GPU.
  EXPECT_FALSE((*profile)->Filter(WholeGpu(), node.View()).ok());
  EXPECT_GT(every->gpu_points, 0);
}

TEST(Profile, ANodeWhoseGpusAreWithheldTakesNoGpuPodWhateverThePluginsSayButStillTakesOthers) {
  const EveryPoint* every = nullptr;
  const absl::StatusOr<std::shared_ptr<const Profile>> profile = EveryPointProfile(&every);
  ASSERT_TRUE(profile.ok()) << profile.status();
  const std::string why = "pod ml/x holds GPUs here that Tessera cannot count";
  const Node node = Node("n").Gpus(2);
  NodeView view = node.View();
  view.gpus_withheld = &why;
  const FilterVerdict refused = (*profile)->Filter(WholeGpu(), view);
  EXPECT_EQ(refused.code, FilterCode::kUnschedulable) << "it may be resolved: not unresolvable";
  EXPECT_EQ(refused.reason_code, "gpus_unaccounted");
  EXPECT_EQ(refused.message, why);
  EXPECT_EQ(every->gpu_points, 0) << "decided before any plugin";
  EXPECT_TRUE((*profile)->Filter(CycleState(Pod().Count(0)), view).ok()) << "a pod asking for no GPU";
}

TEST(ProfileWireScores, TheBestNodesGetTenAndTheOrderBelowIsKeptWhereElevenLevelsAllow) {
  struct Case {
    std::string name;
    std::vector<int64_t> totals;
    std::vector<int64_t> wire;
  };
  const std::vector<Case> cases = {
      {"no fitting node", {}, {}},
      {"one fitting node is the best", {4200}, {10}},
      {"all equally good are all the best", {3000, 3000, 3000}, {10, 10, 10}},
      {"a best node one point ahead of the next keeps its lead", {5300, 5299, 5000, 2000}, {10, 9, 8, 1}},
      {"ties at the top share it", {70, 90, 90, 10}, {7, 10, 10, 1}},
      {"the least good node that fits stays above does-not-fit", {0, 100}, {1, 10}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Profile::WireScores(c.totals), c.wire);
  }
}

TEST(ProfileWireScores, NeverInvertsTheOrderAndOnlyTheHighestSumGetsTen) {
  std::mt19937 rng(5);
  for (int round = 0; round < 500; ++round) {
    std::vector<int64_t> totals(1 + rng() % 40);
    const int64_t spread = 1 + static_cast<int64_t>(rng() % 10'000);
    for (int64_t& t : totals) t = static_cast<int64_t>(rng() % static_cast<uint64_t>(spread));
    const std::vector<int64_t> wire = Profile::WireScores(totals);
    const int64_t max = *std::max_element(totals.begin(), totals.end());
    for (size_t i = 0; i < totals.size(); ++i) {
      EXPECT_EQ(wire[i] == kMaxWireScore, totals[i] == max);
      EXPECT_GE(wire[i], 1);
      for (size_t j = 0; j < totals.size(); ++j) {
        if (totals[i] > totals[j]) {
          EXPECT_GE(wire[i], wire[j]);
        }
      }
    }
  }
}

namespace gpu_exclusions {

// Ranks every GPU by index: like gpu-share on an idle node.
class RankingChooser final : public Plugin, public GpuChooserPlugin {
 public:
  RankingChooser() : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "ranking-chooser"; }
  void RankGpus(const CycleState&, const NodeView& n, RankedGpus& ranked) const override {
    for (const GpuDevice& g : n.gpus) ranked.push_back(RankedGpu{.index = g.index, .tier = g.index});
  }
};

// Rules out fixed GPU indices, and says which.
class RulingOut final : public Plugin, public GpuExclusionPlugin {
 public:
  RulingOut(std::string name, std::vector<int32_t> indices)
      : Plugin(/*memoizable=*/false), name_(std::move(name)), indices_(std::move(indices)) {}
  std::string_view Name() const override { return name_; }
  void ExcludeGpus(const CycleState&, const NodeView&, GpuIndexList& excluded) const override {
    excluded.insert(excluded.end(), indices_.begin(), indices_.end());
  }
  FilterVerdict ExplainExcluded(const CycleState&, const NodeView&) const override {
    return FilterVerdict::NotNow("ruled_out", absl::StrCat(name_, " ruled out ", absl::StrJoin(indices_, ",")));
  }

 private:
  std::string name_;
  std::vector<int32_t> indices_;
};

struct Case {
  std::string name;
  std::vector<std::vector<int32_t>> ruled_out;  // one GPU exclusion plugin per entry
  int32_t count;
  std::optional<std::vector<int32_t>> chosen;  // nullopt: the node is rejected
  std::string rejection;
};

TEST(ProfileGpuExclusions, GpusRuledOutAreNeverChosenAndTooFewLeftRejectTheNode) {
  const std::vector<Case> cases = {
      {"nothing ruled out leaves the chooser's choice", {{}}, 2, std::vector<int32_t>{0, 1}, ""},
      {"a ruled-out GPU is skipped for the next in the ranking", {{0}}, 2, std::vector<int32_t>{1, 2}, ""},
      {"too few GPUs left rejects the node with the plugin's reason", {{0, 1, 2}}, 2, std::nullopt,
       "first ruled out 0,1,2"},
      {"the plugin that ruled GPUs out explains, not one that ruled none", {{}, {1, 2, 3}}, 2, std::nullopt,
       "second ruled out 1,2,3"},
      {"two plugins' exclusions add up", {{0}, {1}}, 2, std::vector<int32_t>{2, 3}, ""},
  };
  const Node node = Node("n").Gpus(4);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
    l.emplace_back(std::make_unique<RankingChooser>(), 1);
    const std::vector<std::string> names = {"first", "second"};
    for (size_t i = 0; i < c.ruled_out.size(); ++i) {
      l.emplace_back(std::make_unique<RulingOut>(names[i], c.ruled_out[i]), 1);
    }
    auto profile = Profile::Create(Plugins(std::move(l)));
    ASSERT_TRUE(profile.ok()) << profile.status();
    const CycleState pod(Pod().Count(c.count));
    const std::optional<GpuChoice> choice = (*profile)->ChooseGpus(pod, node.View());
    const FilterVerdict verdict = (*profile)->Filter(pod, node.View());
    std::vector<std::optional<GpuChoice>> scored;
    const std::vector<NodeView> views = {node.View()};
    const std::vector<int64_t> scores = (*profile)->Score(pod, Pointers(views), &scored);
    EXPECT_EQ(scored[0], choice) << "prioritize scores the GPUs filter and bind see";
    if (!c.chosen.has_value()) {
      EXPECT_EQ(choice, std::nullopt);
      EXPECT_EQ(verdict.code, FilterCode::kUnschedulable);
      EXPECT_EQ(verdict.message, c.rejection);
      continue;
    }
    ASSERT_TRUE(choice.has_value());
    EXPECT_THAT(choice->gpu_indices, ::testing::ElementsAreArray(*c.chosen));
    EXPECT_TRUE(verdict.ok()) << verdict.message;
  }
}

}  // namespace gpu_exclusions

TEST(ProfileReserve, RunsTheReservePluginsInOrderAndUndoesThoseThatReservedWhenOneRefuses) {
  struct Case {
    std::string name;
    std::string node;
    bool ok;
    std::vector<std::string> log;
  };
  const std::vector<Case> cases = {
      {"every plugin reserves, in profile order", "n", true, {"a reserve n", "b reserve n", "c reserve n"}},
      {"a refusal stops the rest and undoes the first, last first",
       "refused-by-b",
       false,
       {"a reserve refused-by-b", "b reserve refused-by-b", "a unreserve refused-by-b"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto log = std::make_shared<testing::ReserveLog>();
    std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
    l.emplace_back(std::make_unique<FakeChooser>(), 1);
    l.emplace_back(std::make_unique<testing::RecordingReserver>("a", log), 1);
    l.emplace_back(std::make_unique<testing::RecordingReserver>("b", log, "refused-by-b"), 1);
    l.emplace_back(std::make_unique<testing::RecordingReserver>("c", log), 1);
    auto profile = Profile::Create(Plugins(std::move(l)));
    ASSERT_TRUE(profile.ok()) << profile.status();
    EXPECT_TRUE((*profile)->has_reserve_plugins());
    const Node node = Node(c.node).Gpus(1);
    const absl::Status reserved = (*profile)->Reserve(WholeGpu(), node.View(), {});
    EXPECT_EQ(reserved.ok(), c.ok) << reserved;
    if (!c.ok) {
      EXPECT_EQ(reserved.message(), "b refuses refused-by-b");
    }
    EXPECT_EQ(log->lines(), c.log);
  }
}

TEST(ProfileReserve, UnreserveAsksEveryReservePluginLastFirstAndAProfileWithoutAnyReservesAtOnce) {
  auto log = std::make_shared<testing::ReserveLog>();
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<FakeChooser>(), 1);
  l.emplace_back(std::make_unique<testing::RecordingReserver>("a", log), 1);
  l.emplace_back(std::make_unique<testing::RecordingReserver>("b", log), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  (*profile)->Unreserve(WholeGpu(), "n", {});
  EXPECT_THAT(log->lines(), ElementsAre("b unreserve n", "a unreserve n"));

  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> plain;
  plain.emplace_back(std::make_unique<FakeChooser>(), 1);
  auto without = Profile::Create(Plugins(std::move(plain)));
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE((*without)->has_reserve_plugins());
  EXPECT_TRUE((*without)->Reserve(WholeGpu(), Node("n").Gpus(1).View(), {}).ok());
}

}  // namespace
}  // namespace tessera
