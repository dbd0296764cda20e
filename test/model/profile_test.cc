#include "scheduler/framework/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(Profile, ScoresAreTheWeightedMeanRoundedOnceToTheWireAndChoicesAreDeterministic) {
  std::vector<std::pair<std::unique_ptr<Plugin>, int64_t>> l;
  l.emplace_back(std::make_unique<FakeChooser>(), 1);
  l.emplace_back(std::make_unique<FakeScore>("a"), 3);
  l.emplace_back(std::make_unique<FakeScore>("b"), 1);
  auto profile = Profile::Create(Plugins(std::move(l)));
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Node four = Node("four").Gpus(4), six = Node("six").Gpus(6), full = Node("full").Gpus(8), none("none");
  const std::vector<NodeView> views = {four.View(), six.View(), full.View(), none.View()};
  std::vector<std::optional<GpuChoice>> choices;
  // four: (40*3 + 40*1) / 4 = 40 -> 4; six: 60 -> 6; full and none do not fit -> 0.
  EXPECT_THAT((*profile)->Score(Pod(), views, &choices), ElementsAre(4, 6, 0, 0));
  ASSERT_EQ(choices.size(), 4u);
  // Bind (next release) re-asks the chooser: the same snapshot gives the same GPUs.
  for (size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(views[i].name);
    EXPECT_EQ(choices[i], (*profile)->ChooseGpus(Pod(), views[i]));
  }
  EXPECT_FALSE(choices[2].has_value());
}

}  // namespace
}  // namespace tessera
