#include "scheduler/framework/profile.h"

#include <algorithm>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Node;
using testing::Pod;

// Picks the first GPU; rejects nodes named "full" (not now) and "never".
class FakeChooser final : public GpuChooserPlugin, public FilterPlugin {
 public:
  std::string_view Name() const override { return "chooser"; }
  std::optional<GpuChoice> ChooseGpus(const PodGpuRequest&, const NodeView& n) const override {
    if (n.gpus.empty() || n.name == "full") return std::nullopt;
    GpuChoice c;
    c.gpu_indices.push_back(n.gpus.front().index);
    return c;
  }
  std::vector<GpuShare> SharesFor(const PodGpuRequest& r, const NodeView&, const GpuChoice& c) const override {
    std::vector<GpuShare> shares;
    for (int32_t i : c.gpu_indices) {
      GpuShare s;
      s.index = i;
      s.guaranteed = r.guaranteed;
      s.limit = r.limit;
      shares.push_back(s);
    }
    return shares;
  }
  FilterVerdict Filter(const PodGpuRequest&, const NodeView& n) const override {
    if (n.name == "never") return FilterVerdict::Never("never", "chooser says never");
    return FilterVerdict::Success();
  }
};

// Rejects everything with its own reason: shows that the first rejection wins.
class FakeRejecter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "rejecter"; }
  FilterVerdict Filter(const PodGpuRequest&, const NodeView&) const override {
    return FilterVerdict::NotNow("rejected", "rejecter says no");
  }
};

// Scores a node by its GPU count × 10.
class FakeScore final : public ScorePlugin {
 public:
  explicit FakeScore(std::string name) : name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  int64_t Score(const PodGpuRequest&, const NodeView& n, const GpuChoice&) const override {
    return static_cast<int64_t>(n.gpus.size()) * 10;
  }

 private:
  std::string name_;
};

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
  EXPECT_EQ((*profile)->Filter(Pod(), never.View()).message, "chooser says never");
  EXPECT_EQ((*profile)->Filter(Pod(), other.View()).message, "rejecter says no");
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
  EXPECT_THAT((*profile)->Score(Pod(), views, &choices), ElementsAre(1, 5, 10, 0, 0));
  ASSERT_EQ(choices.size(), 5u);
  // Bind re-asks the chooser: the same snapshot gives the same GPUs.
  for (size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(views[i].name);
    EXPECT_EQ(choices[i], (*profile)->ChooseGpus(Pod(), views[i]));
  }
  EXPECT_FALSE(choices[3].has_value());
}

// A chooser that scores too, and says what its Score would say of a choice
// on nodes named "scored": 77 there, where Score itself gives 33.
class ScoringChooser final : public GpuChooserPlugin, public ScorePlugin {
 public:
  std::string_view Name() const override { return "scoring-chooser"; }
  std::optional<GpuChoice> ChooseGpus(const PodGpuRequest&, const NodeView& n) const override {
    GpuChoice c;
    c.gpu_indices.push_back(0);
    if (n.name == "scored") c.chooser_score = 77;
    return c;
  }
  std::vector<GpuShare> SharesFor(const PodGpuRequest&, const NodeView&, const GpuChoice&) const override {
    return {};
  }
  int64_t Score(const PodGpuRequest&, const NodeView&, const GpuChoice&) const override { return 33; }
};

TEST(Profile, AChoosersOwnScoreOfItsChoiceStandsForItsScoreAndNoOtherPlugins) {
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<ScoringChooser>(), 1);
  l.emplace_back(std::make_unique<FakeScore>("other"), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node scored = Node("scored").Gpus(1), plain = Node("plain").Gpus(1);
  const std::optional<GpuChoice> carried = (*profile)->ChooseGpus(Pod(), scored.View());
  const std::optional<GpuChoice> bare = (*profile)->ChooseGpus(Pod(), plain.View());
  ASSERT_TRUE(carried.has_value() && bare.has_value());
  EXPECT_EQ((*profile)->RawScore(0, Pod(), scored.View(), *carried), 77) << "the chooser's score, not asked again";
  EXPECT_EQ((*profile)->RawScore(0, Pod(), plain.View(), *bare), 33) << "no score carried: Score is asked";
  EXPECT_EQ((*profile)->RawScore(1, Pod(), scored.View(), *carried), 10) << "another plugin scores for itself";
  EXPECT_EQ(*carried, *bare) << "the same GPUs are the same choice, whatever score they carry";
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

namespace gpu_filters {

// Ranks every GPU by index and takes the first `count`: like gpu-share on an idle node.
class RankingChooser final : public GpuChooserPlugin {
 public:
  std::string_view Name() const override { return "ranking-chooser"; }
  std::optional<GpuChoice> ChooseGpus(const PodGpuRequest& r, const NodeView& n) const override {
    if (n.gpus.size() < static_cast<size_t>(r.count)) return std::nullopt;
    GpuChoice c;
    for (int32_t i = 0; i < r.count; ++i) c.gpu_indices.push_back(n.gpus[static_cast<size_t>(i)].index);
    return c;
  }
  std::optional<RankedGpus> RankGpus(const PodGpuRequest&, const NodeView& n) const override {
    std::optional<RankedGpus> ranked(std::in_place);
    for (const GpuDevice& g : n.gpus) ranked->push_back(RankedGpu{.index = g.index, .tier = g.index});
    return ranked;
  }
  std::vector<GpuShare> SharesFor(const PodGpuRequest&, const NodeView&, const GpuChoice&) const override {
    return {};
  }
};

// Rules out fixed GPU indices, and says which.
class RulingOut final : public GpuFilterPlugin {
 public:
  RulingOut(std::string name, std::vector<int32_t> indices) : name_(std::move(name)), indices_(std::move(indices)) {}
  std::string_view Name() const override { return name_; }
  void ExcludeGpus(const PodGpuRequest&, const NodeView&, GpuIndexList& excluded) const override {
    excluded.insert(excluded.end(), indices_.begin(), indices_.end());
  }
  FilterVerdict ExplainExcluded(const PodGpuRequest&, const NodeView&) const override {
    return FilterVerdict::NotNow("ruled_out", absl::StrCat(name_, " ruled out ", absl::StrJoin(indices_, ",")));
  }

 private:
  std::string name_;
  std::vector<int32_t> indices_;
};

struct Case {
  std::string name;
  bool ranking_chooser;
  std::vector<std::vector<int32_t>> ruled_out;  // one GPU filter plugin per entry
  int32_t count;
  std::optional<std::vector<int32_t>> chosen;  // nullopt: the node is rejected
  std::string rejection;
};

TEST(ProfileGpuFilters, GpusRuledOutAreNeverChosenAndTooFewLeftRejectTheNode) {
  const std::vector<Case> cases = {
      {"nothing ruled out leaves the chooser's choice", true, {{}}, 2, std::vector<int32_t>{0, 1}, ""},
      {"a ruled-out GPU is skipped for the next in the ranking", true, {{0}}, 2, std::vector<int32_t>{1, 2}, ""},
      {"too few GPUs left rejects the node with the plugin's reason", true, {{0, 1, 2}}, 2, std::nullopt,
       "first ruled out 0,1,2"},
      {"the plugin that ruled GPUs out explains, not one that ruled none", true, {{}, {1, 2, 3}}, 2, std::nullopt,
       "second ruled out 1,2,3"},
      {"two plugins' exclusions add up", true, {{0}, {1}}, 2, std::vector<int32_t>{2, 3}, ""},
      {"a chooser that cannot rank keeps a choice that avoids them", false, {{3}}, 2,
       std::vector<int32_t>{0, 1}, ""},
      {"a chooser that cannot rank has no choice when its own is ruled out", false, {{1}}, 2, std::nullopt,
       "first ruled out 1"},
  };
  const Node node = Node("n").Gpus(4);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
    if (c.ranking_chooser) {
      l.emplace_back(std::make_unique<RankingChooser>(), 1);
    } else {
      // The ranking chooser with RankGpus hidden.
      class Plain final : public GpuChooserPlugin {
       public:
        std::string_view Name() const override { return "plain-chooser"; }
        std::optional<GpuChoice> ChooseGpus(const PodGpuRequest& r, const NodeView& n) const override {
          return RankingChooser().ChooseGpus(r, n);
        }
        std::vector<GpuShare> SharesFor(const PodGpuRequest&, const NodeView&, const GpuChoice&) const override {
          return {};
        }
      };
      l.emplace_back(std::make_unique<Plain>(), 1);
    }
    const std::vector<std::string> names = {"first", "second"};
    for (size_t i = 0; i < c.ruled_out.size(); ++i) {
      l.emplace_back(std::make_unique<RulingOut>(names[i], c.ruled_out[i]), 1);
    }
    auto profile = Profile::Create(Plugins(std::move(l)));
    ASSERT_TRUE(profile.ok()) << profile.status();
    const PodGpuRequest pod = Pod().Count(c.count);
    const std::optional<GpuChoice> choice = (*profile)->ChooseGpus(pod, node.View());
    const FilterVerdict verdict = (*profile)->Filter(pod, node.View());
    std::vector<std::optional<GpuChoice>> scored;
    const std::vector<int64_t> scores = (*profile)->Score(pod, std::vector<NodeView>{node.View()}, &scored);
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

}  // namespace gpu_filters

}  // namespace
}  // namespace tessera
