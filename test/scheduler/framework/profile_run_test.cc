#include <atomic>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/framework/profile.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using testing::Node;
using testing::Pod;
using testing::Pointers;

// Takes the lowest-index GPUs; memoizable or not as told.
class LowestGpus final : public Plugin, public GpuChooserPlugin {
 public:
  explicit LowestGpus(bool memoizable = true) : Plugin(memoizable) {}
  std::string_view Name() const override { return "lowest"; }
  void RankGpus(const CycleState&, const NodeView& n, RankedGpus& ranked) const override {
    for (const GpuDevice& g : n.gpus) ranked.push_back(RankedGpu{.index = g.index, .tier = g.index});
  }
};

// Scores a node by its GPU count × 10, and counts what it is asked.
class CountingScore final : public Plugin, public ScorePlugin {
 public:
  CountingScore(std::string name, bool memoizable) : Plugin(memoizable), name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }
  int64_t ScoreNode(const CycleState&, const NodeView& n, const GpuChoice&) const override {
    ++asked;
    return static_cast<int64_t>(n.gpus.size()) * 10;
  }
  mutable std::atomic<int> asked{0};

 private:
  std::string name_;
};

// Rejects nodes named "tainted"; memoizable or not as told.
class RejectsTainted final : public Plugin, public NodeFilterPlugin {
 public:
  explicit RejectsTainted(bool memoizable = true) : Plugin(memoizable) {}
  std::string_view Name() const override { return "rejects-tainted"; }
  FilterVerdict FilterNode(const CycleState&, const NodeView& n) const override {
    return n.name == "tainted" ? FilterVerdict::Never("tainted", "tainted") : FilterVerdict::Success();
  }
};

// Rules GPU 0 out everywhere.
class RulesOutGpuZero final : public Plugin, public GpuExclusionPlugin {
 public:
  RulesOutGpuZero() : Plugin(/*memoizable=*/false) {}
  std::string_view Name() const override { return "rules-out-0"; }
  void ExcludeGpus(const CycleState&, const NodeView&, GpuIndexList& excluded) const override { excluded.push_back(0); }
  FilterVerdict ExplainExcluded(const CycleState&, const NodeView&) const override {
    return FilterVerdict::NotNow("gpu_0", "GPU 0 is ruled out");
  }
};

// A cache holding planted answers by node name; records what it was given.
class PlantedCache final : public NodeAnswerCache {
 public:
  void Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
            std::vector<size_t>& missing) override {
    ++finds;
    for (size_t i = 0; i < nodes.size(); ++i) {
      found[i] = nullptr;
      for (const auto& [name, answer] : planted) {
        if (nodes[i]->name == name) found[i] = &answer;
      }
      if (found[i] == nullptr) missing.push_back(i);
    }
  }
  void Keep(absl::Span<const NodeView* const> nodes, absl::Span<const size_t> computed_at,
            std::vector<NodeAnswer>& computed) override {
    for (size_t k = 0; k < computed_at.size(); ++k) kept.emplace_back(nodes[computed_at[k]]->name, computed[k]);
  }
  std::vector<std::pair<std::string, NodeAnswer>> planted;
  std::vector<std::pair<std::string, NodeAnswer>> kept;
  int finds = 0;
};

NodeAnswer Answer(std::vector<int32_t> gpus, std::vector<int64_t> raw) {
  NodeAnswer a;
  a.fits = true;
  a.choice.gpu_indices.assign(gpus.begin(), gpus.end());
  a.raw.assign(raw.begin(), raw.end());
  return a;
}

std::shared_ptr<const Profile> MakeProfile(std::vector<std::shared_ptr<const Plugin>> plugins) {
  std::vector<WeightedPlugin> weighted;
  for (auto& p : plugins) weighted.push_back({std::move(p), 1});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(weighted));
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : nullptr;
}

TEST(ProfileRunTest, AnAnswerFoundInTheCacheIsUsedAndOnlyTheOthersAreComputedAndKept) {
  auto memoizable = std::make_shared<const CountingScore>("kept", true);
  auto fresh = std::make_shared<const CountingScore>("fresh", false);
  const auto profile = MakeProfile({std::make_shared<const LowestGpus>(), memoizable, fresh});
  const Node a = Node("a").Gpus(2), b = Node("b").Gpus(4);
  const std::vector<NodeView> views = {a.View(), b.View()};
  PlantedCache cache;
  // A planted answer a real run would never give: it shows the run used it.
  cache.planted.emplace_back("a", Answer({1}, {70, 0}));
  std::vector<std::optional<GpuChoice>> choices;
  const RunResult run = profile->Run(CycleState(Pod()), Pointers(views),
                                     RunOptions{.cache = &cache, .filter = false, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr},
                                     &choices);
  EXPECT_EQ(cache.finds, 1);
  EXPECT_EQ(run.computed, 1u);
  ASSERT_EQ(cache.kept.size(), 1u);
  EXPECT_EQ(cache.kept[0].first, "b") << "only the node not found is computed and handed to Keep";
  EXPECT_THAT(cache.kept[0].second.raw, ElementsAre(40, 0)) << "memoizable scores kept; the others are not";
  EXPECT_THAT(choices[0]->gpu_indices, ElementsAre(1)) << "the found choice stands";
  // a: the planted 70 and a fresh 20; b: 40 and 40.
  EXPECT_THAT(run.totals, ElementsAre(70 + 20, 40 + 40));
  EXPECT_EQ(memoizable->asked, 1) << "asked about b only";
  EXPECT_EQ(fresh->asked, 2) << "a score that is not memoizable is asked on every node, found or not";
}

TEST(ProfileRunTest, TheCacheIsNotConsultedWhereAnswersAreNotAFunctionOfTheNodesVersion) {
  struct Case {
    std::string name;
    bool chooser_memoizable;
    bool filter_memoizable;
    bool filter;
    bool consulted;
  };
  const std::vector<Case> cases = {
      {"a memoizable profile is consulted", true, true, false, true},
      {"a chooser that is not memoizable is never", false, true, false, false},
      {"a node filter that is not memoizable does not matter when the run does not filter", true, false, false, true},
      {"but is when it does", true, false, true, false},
      {"a memoizable node filter is consulted in a filtering run", true, true, true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto profile = MakeProfile(
        {std::make_shared<const LowestGpus>(c.chooser_memoizable), std::make_shared<const RejectsTainted>(c.filter_memoizable)});
    const Node a = Node("a").Gpus(1);
    const std::vector<NodeView> views = {a.View()};
    PlantedCache cache;
    (void)profile->Run(CycleState(Pod()), Pointers(views),
                       RunOptions{.cache = &cache, .filter = c.filter, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr}, nullptr);
    EXPECT_EQ(cache.finds == 1, c.consulted);
    EXPECT_EQ(cache.kept.size() == 1, c.consulted);
  }
}

TEST(ProfileRunTest, AFilteringRunFitsExactlyTheNodesFilterPassesAndChoosesAsChooseGpus) {
  const auto profile = MakeProfile({std::make_shared<const LowestGpus>(), std::make_shared<const RejectsTainted>(),
                                    std::make_shared<const RulesOutGpuZero>()});
  const Node ok = Node("ok").Gpus(3), tainted = Node("tainted").Gpus(3), one = Node("one").Gpus(1);
  const std::vector<NodeView> views = {ok.View(), tainted.View(), one.View()};
  const CycleState pod(Pod().Count(2));
  for (bool filter : {false, true}) {
    SCOPED_TRACE(filter ? "filtering" : "not filtering");
    std::vector<std::optional<GpuChoice>> choices;
    const RunResult run = profile->Run(
        pod, Pointers(views), RunOptions{.cache = nullptr, .filter = filter, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr},
        &choices);
    std::vector<size_t> passing;
    for (size_t i = 0; i < views.size(); ++i) {
      const bool fits = (!filter || profile->Filter(pod, views[i]).ok()) && profile->ChooseGpus(pod, views[i]).has_value();
      if (!fits) continue;
      passing.push_back(i);
      EXPECT_EQ(choices[i], profile->ChooseGpus(pod, views[i]));
    }
    EXPECT_EQ(run.fitting, passing);
  }
  // GPU 0 ruled out: "ok" gets GPUs 1 and 2, and "one" has too few left.
  std::vector<std::optional<GpuChoice>> choices;
  const RunResult run = profile->Run(pod, Pointers(views), RunOptions{}, &choices);
  EXPECT_THAT(run.fitting, ElementsAre(0, 1));
  EXPECT_THAT(choices[0]->gpu_indices, ElementsAre(1, 2));
}

TEST(ProfileRunTest, ManyNodesToComputeGoToTheParallelLoopAndTheResultIsTheSame) {
  const auto profile = MakeProfile({std::make_shared<const LowestGpus>(), std::make_shared<const CountingScore>("s", true)});
  std::vector<Node> nodes;
  for (int i = 0; i < 40; ++i) nodes.push_back(Node("n" + std::to_string(i)).Gpus(1 + i % 8));
  std::vector<NodeView> views;
  for (const Node& n : nodes) views.push_back(n.View());
  const CycleState pod(Pod().Count(3));
  int loops = 0;
  const auto in_two_halves = [&loops](size_t n, absl::FunctionRef<void(size_t, size_t)> body) {
    ++loops;
    body(n / 2, n);  // out of order: each answer has its own place
    body(0, n / 2);
  };
  const ParallelFor parallel_for(in_two_halves);
  const RunResult serial = profile->Run(pod, Pointers(views), RunOptions{}, nullptr);
  const RunResult few = profile->Run(
      pod, Pointers(views), RunOptions{.cache = nullptr, .filter = false, .parallel_for = &parallel_for, .min_parallel = 41, .scratch = nullptr},
      nullptr);
  EXPECT_FALSE(few.parallel);
  EXPECT_EQ(loops, 0) << "fewer nodes than min_parallel stay on the caller";
  const RunResult many = profile->Run(
      pod, Pointers(views), RunOptions{.cache = nullptr, .filter = false, .parallel_for = &parallel_for, .min_parallel = 40, .scratch = nullptr},
      nullptr);
  EXPECT_TRUE(many.parallel);
  EXPECT_EQ(loops, 1);
  EXPECT_EQ(many.fitting, serial.fitting);
  EXPECT_EQ(many.totals, serial.totals);
  // Working space kept from run to run changes nothing, whatever the last run left in it.
  RunScratch scratch;
  RunResult kept;
  const RunOptions with_scratch{
      .cache = nullptr, .filter = false, .parallel_for = nullptr, .min_parallel = 0, .scratch = &scratch};
  profile->Run(CycleState(Pod().Count(8)), Pointers(views), with_scratch, nullptr, kept);
  profile->Run(pod, Pointers(views), with_scratch, nullptr, kept);
  EXPECT_EQ(kept.fitting, serial.fitting);
  EXPECT_EQ(kept.totals, serial.totals);
}

}  // namespace
}  // namespace tessera
