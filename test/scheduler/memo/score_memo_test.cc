#include "scheduler/memo/score_memo.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/memo/worker_pool.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Holding;
using testing::Inventory;
using testing::Pod;

// Takes the first GPUs where the pod's share fits by guaranteed milli.
class FirstFitChooser final : public Plugin, public GpuChooserPlugin {
 public:
  explicit FirstFitChooser(bool memoizable = true) : Plugin(memoizable) {}
  std::string_view Name() const override { return "first-fit"; }
  void RankGpus(const CycleState& cycle, const NodeView& n, RankedGpus& ranked) const override {
    for (const GpuDevice& g : n.gpus) {
      if (n.UsageOf(g.index).guaranteed + cycle.request().guaranteed <= kOneGpu) {
        ranked.push_back(RankedGpu{.index = g.index, .tier = g.index});
      }
    }
  }
};

// Scores the milli-GPU left free on the node (and the pod's salt), min-max
// normalised, so that one node's change moves every node's final score.
// Counts its Score calls.
class CountingFreeScorer final : public Plugin, public ScorePlugin, public NormalizeScorePlugin {
 public:
  explicit CountingFreeScorer(std::atomic<int>* calls, bool memoizable = true)
      : Plugin(memoizable), calls_(calls) {}
  std::string_view Name() const override { return "counting-free"; }
  int64_t ScoreNode(const CycleState& cycle, const NodeView& n, const GpuChoice&) const override {
    const PodGpuRequest& r = cycle.request();
    calls_->fetch_add(1);
    int64_t free = 0;
    for (const GpuDevice& g : n.gpus) free += (kOneGpu - n.UsageOf(g.index).guaranteed).value();
    return free + static_cast<int64_t>(r.salt % 7);
  }
  void NormalizeScores(absl::Span<int64_t> scores) const override {
    if (scores.empty()) return;
    const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
    const int64_t low = *lo, range = *hi - *lo;
    for (int64_t& s : scores) s = range == 0 ? 0 : (s - low) * kMaxPluginScore / range;
  }

 private:
  std::atomic<int>* calls_;
};

// Prefers nodes with fewer pods: a second scorer with its own weight.
class FewPodsScorer final : public Plugin, public ScorePlugin {
 public:
  FewPodsScorer() : Plugin(/*memoizable=*/true) {}
  std::string_view Name() const override { return "few-pods"; }
  int64_t ScoreNode(const CycleState&, const NodeView& n, const GpuChoice&) const override {
    int64_t pods = 0;
    for (const GpuUsage& u : n.usage) pods += u.pods;
    return std::max<int64_t>(0, kMaxPluginScore - 10 * pods);
  }
};

struct ProfileOptions {
  bool chooser_memoizable = true;
  bool scorer_memoizable = true;
};

std::shared_ptr<const Profile> MakeProfile(std::atomic<int>* calls, ProfileOptions o = {}) {
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<FirstFitChooser>(o.chooser_memoizable), 1});
  plugins.push_back({std::make_unique<CountingFreeScorer>(calls, o.scorer_memoizable), 3});
  plugins.push_back({std::make_unique<FewPodsScorer>(), 2});
  absl::StatusOr<std::shared_ptr<const Profile>> p = Profile::Create(std::move(plugins));
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

std::string NodeName(int i) { return absl::StrCat("node-", i); }

// A model of `nodes` nodes of 4 GPUs, a few pods on them.
void Fill(ClusterModel& model, int nodes) {
  for (int i = 0; i < nodes; ++i) {
    model.UpsertNode(NodeName(i), Inventory(4), absl::OkStatus());
    if (i % 3 == 0) model.UpsertPod(Holding(absl::StrCat("seed-", i), NodeName(i), i % 4, 250 * (1 + i % 4)));
  }
}

std::vector<const NodeView*> Views(const ClusterSnapshot& s) {
  std::vector<const NodeView*> views;
  for (NodeIndex i = 0; i < s.node_count(); ++i) views.push_back(&s.View(i));
  return views;
}

// --- node versions ---------------------------------------------------------

TEST(NodeVersionTest, EveryPublishedNodeHasItsOwnVersion) {
  ClusterModel model;
  Fill(model, 5);
  const auto s = model.Publish();
  std::set<uint64_t> seen;
  for (NodeIndex i = 0; i < s->node_count(); ++i) {
    EXPECT_NE(s->View(i).version, 0u);
    EXPECT_EQ(s->View(i).version, s->node(i).version);
    seen.insert(s->View(i).version);
  }
  EXPECT_EQ(seen.size(), 5u);
}

TEST(NodeVersionTest, OnlyTheNodesThatChangedGetANewVersion) {
  struct Case {
    std::string name;
    std::function<void(ClusterModel&)> change;
    std::set<std::string> renewed;
  };
  const std::vector<Case> cases = {
      {"a bind renews the node it lands on", [](ClusterModel& m) { m.UpsertPod(Holding("p", "node-1", 0, 100)); },
       {"node-1"}},
      {"an unbind renews the node it leaves", [](ClusterModel& m) { m.RemovePod("seed-3"); }, {"node-3"}},
      {"a reservation renews its node", [](ClusterModel& m) {
         ASSERT_TRUE(m.Reserve(Holding("r", "node-2", 1, 500), absl::InfiniteFuture()).ok());
       }, {"node-2"}},
      {"a new inventory renews the node",
       [](ClusterModel& m) { m.UpsertNode("node-4", Inventory(8), absl::OkStatus()); }, {"node-4"}},
      {"a new node keeps every other node's version",
       [](ClusterModel& m) { m.UpsertNode("node-9", Inventory(2), absl::OkStatus()); }, {"node-9"}},
      {"the same inventory again (a Node status heartbeat) leaves the version alone",
       [](ClusterModel& m) { m.UpsertNode("node-4", Inventory(4), absl::OkStatus()); }, {}},
      {"live telemetry leaves the version alone",
       [](ClusterModel& m) { m.SetNodeTelemetry("node-0", std::make_shared<NodeTelemetry>()); }, {}},
  };
  for (const Case& c : cases) {
    ClusterModel model;
    Fill(model, 5);
    const auto before = model.Publish();
    c.change(model);
    const auto after = model.Publish();
    for (NodeIndex i = 0; i < after->node_count(); ++i) {
      const std::string& name = after->node(i).name;
      const std::optional<NodeIndex> was = before->FindNode(name);
      const bool renewed = !was.has_value() || before->View(*was).version != after->View(i).version;
      EXPECT_EQ(renewed, c.renewed.contains(name)) << c.name << ": " << name;
    }
  }
}

TEST(NodeVersionTest, TwoModelsNeverShareAVersion) {
  ClusterModel a, b;
  Fill(a, 3);
  Fill(b, 3);
  const auto sa = a.Publish(), sb = b.Publish();
  for (NodeIndex i = 0; i < 3; ++i) {
    for (NodeIndex j = 0; j < 3; ++j) EXPECT_NE(sa->View(i).version, sb->View(j).version);
  }
}

// --- the memo ----------------------------------------------------------------

TEST(ScoreMemoTest, RecomputesOnlyTheNodesThatChanged) {
  struct Case {
    std::string name;
    std::function<void(ClusterModel&)> change;
    uint64_t recomputed;
  };
  const std::vector<Case> cases = {
      {"nothing changed", [](ClusterModel&) {}, 0},
      {"one bind", [](ClusterModel& m) { m.UpsertPod(Holding("p", "node-4", 2, 500)); }, 1},
      {"one unbind", [](ClusterModel& m) { m.RemovePod("seed-6"); }, 1},
      {"binds on two nodes",
       [](ClusterModel& m) {
         m.UpsertPod(Holding("p", "node-1", 0, 500));
         m.UpsertPod(Holding("q", "node-2", 0, 500));
       },
       2},
      {"a node's GPUs replaced", [](ClusterModel& m) { m.UpsertNode("node-7", Inventory(2), absl::OkStatus()); }, 1},
      {"a node update that changes nothing Tessera reads (a heartbeat)",
       [](ClusterModel& m) { m.UpsertNode("node-7", Inventory(4), absl::OkStatus()); }, 0},
      {"a node's allocatable CPU changed",
       [](ClusterModel& m) {
         m.UpsertNode("node-7", Inventory(4), absl::OkStatus(),
                      HostResources{.cpu_capacity = MilliCpu(64000), .memory_capacity = MemoryMiB(1 << 18)});
       },
       1},
      {"a node added", [](ClusterModel& m) { m.UpsertNode("node-new", Inventory(4), absl::OkStatus()); }, 1},
      {"a node removed", [](ClusterModel& m) { m.RemoveNode("node-5"); }, 0},
      {"only live telemetry changed",
       [](ClusterModel& m) { m.SetNodeTelemetry("node-0", std::make_shared<NodeTelemetry>()); }, 0},
  };
  for (const Case& c : cases) {
    std::atomic<int> calls{0};
    const auto profile = MakeProfile(&calls);
    const ScoreMemo memo(profile);
    ClusterModel model;
    Fill(model, 10);
    const CycleState pod(Pod().Fraction(500));
    const std::vector<int64_t> first = memo.Score(pod, Views(*model.Publish()), nullptr);
    const ScoreMemo::Counters warm = memo.counters();
    EXPECT_EQ(warm.nodes_computed, 10u) << c.name;
    c.change(model);
    const auto snapshot = model.Publish();
    const std::vector<const NodeView*> views = Views(*snapshot);
    calls = 0;
    EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr)) << c.name;
    const ScoreMemo::Counters after = memo.counters();
    EXPECT_EQ(after.nodes_computed - warm.nodes_computed, c.recomputed) << c.name;
    EXPECT_EQ(after.nodes_reused - warm.nodes_reused, views.size() - c.recomputed) << c.name;
    // The counting scorer ran on the recomputed nodes (where the pod fits)
    // and on every node for the reference Profile::Score.
    EXPECT_LE(static_cast<uint64_t>(calls.load()), c.recomputed + views.size()) << c.name;
  }
}

// 400 rounds of random binds, unbinds, node changes and requests over a
// cluster of `nodes` nodes (two more come and go; every 100 rounds every
// node changes at once), each answered by the memo as by Profile::Score.
// \return the memo's counters at the end.
ScoreMemo::Counters ExpectAnswersAsProfileScoreThroughRandomChanges(int nodes, WorkerPool* pool) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls);
  const ScoreMemo memo(profile, ScoreMemo::kDefaultRequests, pool);
  ClusterModel model;
  Fill(model, nodes);
  std::mt19937_64 rng(6);
  PodGpuRequest salted = Pod().Fraction(250);
  salted.salt = 5;
  const std::vector<PodGpuRequest> requests = {Pod().Fraction(250), Pod().Fraction(500), Pod(), Pod().Count(2),
                                               Pod().Fraction(250).Count(3), salted};
  int next_uid = 0;
  std::vector<std::string> uids;
  for (int round = 0; round < 400; ++round) {
    const int node = static_cast<int>(rng() % static_cast<uint64_t>(nodes + 2));  // the last two come and go
    if (round % 100 == 99) {
      for (int i = 0; i < nodes; ++i) {
        model.UpsertNode(NodeName(i), Inventory(round % 200 == 99 ? 8 : 4), absl::OkStatus());
      }
    }
    switch (rng() % 5) {
      case 0:
      case 1: {
        const std::string uid = absl::StrCat("pod-", next_uid++);
        model.UpsertPod(Holding(uid, NodeName(node), static_cast<int32_t>(rng() % 4), 100 * (1 + rng() % 6)));
        uids.push_back(uid);
        break;
      }
      case 2:
        if (!uids.empty()) {
          const size_t k = rng() % uids.size();
          model.RemovePod(uids[k]);
          uids.erase(uids.begin() + static_cast<ptrdiff_t>(k));
        }
        break;
      case 3:
        model.UpsertNode(NodeName(node), Inventory(1 + static_cast<int>(rng() % 8)), absl::OkStatus());
        break;
      case 4:
        model.RemoveNode(NodeName(node));
        break;
    }
    const auto snapshot = model.Publish();
    std::vector<const NodeView*> views = Views(*snapshot);
    std::shuffle(views.begin(), views.end(), rng);  // kube-scheduler's order and subset vary
    views.resize(views.size() - rng() % 5);
    const CycleState pod(requests[rng() % requests.size()]);
    std::vector<std::optional<GpuChoice>> memo_choices, profile_choices;
    const std::vector<int64_t> memo_scores = memo.Score(pod, views, &memo_choices);
    const std::vector<int64_t> profile_scores = profile->Score(pod, views, &profile_choices);
    EXPECT_EQ(memo_scores, profile_scores) << "round " << round;
    EXPECT_EQ(memo_choices, profile_choices) << "round " << round;
    if (memo_scores != profile_scores || memo_choices != profile_choices) break;
  }
  const ScoreMemo::Counters counters = memo.counters();
  EXPECT_GT(counters.nodes_reused, counters.nodes_computed);
  EXPECT_EQ(counters.requests_bypassed, 0u);
  return counters;
}

TEST(ScoreMemoTest, AnswersAsProfileScoreThroughRandomChanges) {
  struct Case {
    std::string name;
    int nodes;
    int pool_threads;  // -1: no pool
    bool computes_in_parallel;
  };
  const std::vector<Case> cases = {
      {"a small cluster without a pool", 30, -1, false},
      {"a small cluster with a pool, too few nodes to compute to use it", 30, 3, false},
      {"a large cluster without a pool", 700, -1, false},
      {"a large cluster with a pool of 3, each new request and mass change computed in parallel", 700, 3, true},
      {"a large cluster with a pool without threads", 700, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<WorkerPool> pool;
    if (c.pool_threads >= 0) pool.emplace(c.pool_threads);
    const ScoreMemo::Counters counters =
        ExpectAnswersAsProfileScoreThroughRandomChanges(c.nodes, pool.has_value() ? &*pool : nullptr);
    if (c.computes_in_parallel) {
      // The first request of each of the 6 shapes, and those after each mass change.
      EXPECT_GE(counters.nodes_computed_in_parallel, 6u * ScoreMemo::kMinParallelNodes);
      EXPECT_LT(counters.nodes_computed_in_parallel, counters.nodes_computed) << "single changes stay serial";
    } else {
      EXPECT_EQ(counters.nodes_computed_in_parallel, 0u);
    }
  }
}

TEST(ScoreMemoTest, AProfileWhoseChooserIsNotMemoizableIsScoredWithoutTheMemo) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls, {.chooser_memoizable = false});
  EXPECT_FALSE(profile->memoizable());
  const ScoreMemo memo(profile);
  ClusterModel model;
  Fill(model, 6);
  const std::vector<const NodeView*> views = Views(*model.Publish());
  const CycleState pod(Pod().Fraction(250));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr));
  EXPECT_EQ(memo.counters().requests_bypassed, 2u);
  EXPECT_EQ(memo.counters().nodes_computed, 0u);
}

TEST(ScoreMemoTest, AScorerThatIsNotMemoizableScoresEveryRequestWhileTheRestIsKept) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls, {.scorer_memoizable = false});
  EXPECT_TRUE(profile->memoizable());
  const ScoreMemo memo(profile);
  ClusterModel model;
  Fill(model, 6);
  const std::vector<const NodeView*> views = Views(*model.Publish());
  const CycleState pod(Pod().Fraction(250));
  const std::vector<int64_t> expected = profile->Score(pod, views, nullptr);
  calls = 0;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(memo.Score(pod, views, nullptr), expected);
  EXPECT_EQ(calls.load(), 3 * 6) << "the non-memoizable scorer scores every fitting node on every request";
  EXPECT_EQ(memo.counters().nodes_computed, 6u) << "the choice and the memoizable scorer's scores are kept";
  EXPECT_EQ(memo.counters().requests_bypassed, 0u);
}

// Rules out the GPUs listed in a shared, changing set: a stand-in for live
// load, which no node version names.
class ChangingGpuFilter final : public Plugin, public GpuExclusionPlugin {
 public:
  explicit ChangingGpuFilter(const std::set<int32_t>* hot)
      : Plugin(/*memoizable=*/false), hot_(hot) {}
  std::string_view Name() const override { return "changing-gpu-filter"; }
  void ExcludeGpus(const CycleState&, const NodeView&, GpuIndexList& excluded) const override {
    excluded.insert(excluded.end(), hot_->begin(), hot_->end());
  }
  FilterVerdict ExplainExcluded(const CycleState&, const NodeView&) const override {
    return FilterVerdict::NotNow("hot", "hot");
  }

 private:
  const std::set<int32_t>* hot_;
};

TEST(ScoreMemoTest, GpusRuledOutAnewOnEachRequestGiveProfileScoresAnswer) {
  std::set<int32_t> hot;
  std::atomic<int> calls{0};
  std::vector<WeightedPlugin> plugins;
  plugins.push_back({std::make_unique<FirstFitChooser>(), 1});
  plugins.push_back({std::make_unique<ChangingGpuFilter>(&hot), 1});
  plugins.push_back({std::make_unique<CountingFreeScorer>(&calls), 3});
  plugins.push_back({std::make_unique<FewPodsScorer>(), 2});
  absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_TRUE((*profile)->memoizable());
  const ScoreMemo memo(*profile);
  ClusterModel model;
  Fill(model, 9);
  const std::vector<const NodeView*> views = Views(*model.Publish());
  struct Case {
    std::string name;
    std::set<int32_t> hot;
  };
  const std::vector<Case> cases = {{"nothing ruled out", {}},
                                   {"the kept choice's GPU ruled out", {0}},
                                   {"all but one GPU ruled out", {0, 1, 2}},
                                   {"every GPU ruled out", {0, 1, 2, 3}},
                                   {"nothing ruled out again", {}}};
  for (const Case& c : cases) {
    hot = c.hot;
    for (const CycleState& pod : {CycleState(Pod().Fraction(250)), CycleState(Pod().Fraction(500).Count(2))}) {
      std::vector<std::optional<GpuChoice>> memo_choices, profile_choices;
      EXPECT_EQ(memo.Score(pod, views, &memo_choices), (*profile)->Score(pod, views, &profile_choices)) << c.name;
      EXPECT_EQ(memo_choices, profile_choices) << c.name;
      for (const std::optional<GpuChoice>& choice : memo_choices) {
        if (!choice.has_value()) continue;
        for (int32_t gpu : choice->gpu_indices) EXPECT_FALSE(c.hot.contains(gpu)) << c.name;
      }
    }
  }
  EXPECT_EQ(memo.counters().nodes_computed, 2u * 9u) << "ruling GPUs out never renews what is kept";
}

TEST(ScoreMemoTest, ViewsWithoutAVersionAreComputedEveryTimeAndNeverKept) {
  WorkerPool pool(2);
  for (WorkerPool* p : {static_cast<WorkerPool*>(nullptr), &pool}) {
    SCOPED_TRACE(p == nullptr ? "on the caller" : "on the pool");
    std::atomic<int> calls{0};
    const auto profile = MakeProfile(&calls);
    const ScoreMemo memo(profile, ScoreMemo::kDefaultRequests, p);
    ClusterModel model;
    const size_t n = p == nullptr ? 6 : ScoreMemo::kMinParallelNodes + 8;
    Fill(model, static_cast<int>(n));
    const auto snapshot = model.Publish();
    std::vector<const NodeView*> views = Views(*snapshot);
    NodeView unversioned_0 = *views[0], unversioned_3 = *views[3];
    unversioned_0.version = 0;  // as from a request's own Node object
    unversioned_3.version = 0;
    views[0] = &unversioned_0;
    views[3] = &unversioned_3;
    const CycleState pod(Pod().Fraction(250));
    EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr)) << "cold";
    for (int round = 0; round < 3; ++round) {
      const ScoreMemo::Counters before = memo.counters();
      EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr)) << "round " << round;
      EXPECT_EQ(memo.counters().nodes_computed - before.nodes_computed, 2u) << "round " << round;
      EXPECT_LE(memo.memoized_nodes(), ScoreMemo::MaxEntries(n - 2)) << "round " << round;
    }
  }
}

TEST(ScoreMemoTest, ANodeNamedTwiceInOneRequestIsAnsweredAlikeEitherWay) {
  // kube-scheduler does not repeat names, but a request may: the node's
  // version then appears twice, cold and warm, on the caller and on a pool.
  WorkerPool pool(2);
  for (WorkerPool* p : {static_cast<WorkerPool*>(nullptr), &pool}) {
    SCOPED_TRACE(p == nullptr ? "on the caller" : "on the pool");
    std::atomic<int> calls{0};
    const auto profile = MakeProfile(&calls);
    const ScoreMemo memo(profile, ScoreMemo::kDefaultRequests, p);
    ClusterModel model;
    Fill(model, static_cast<int>(ScoreMemo::kMinParallelNodes) + 8);
    const auto snapshot = model.Publish();
    std::vector<const NodeView*> views = Views(*snapshot);
    views.push_back(views[1]);
    views.push_back(views[5]);
    const CycleState pod(Pod().Fraction(250));
    EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr)) << "cold";
    EXPECT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr)) << "warm";
  }
}

TEST(ScoreMemoTest, DistinctRequestsKeepTheirOwnAnswers) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls);
  ClusterModel model;
  Fill(model, 8);
  model.UpsertPod(Holding("big", "node-1", 0, 800));
  const std::vector<const NodeView*> views = Views(*model.Publish());
  PodGpuRequest salted = Pod().Fraction(250);
  salted.salt = 3;
  const std::vector<PodGpuRequest> requests = {Pod().Fraction(250), Pod().Fraction(500), Pod(), salted};
  struct Case {
    std::string name;
    size_t max_requests;
    uint64_t computed_per_request_after_warmup;
  };
  for (const Case& c : std::vector<Case>{{"all kept", 8, 0}, {"fewer kept than asked: evicted in turn", 2, 8}}) {
    const ScoreMemo memo(profile, c.max_requests);
    for (const PodGpuRequest& r : requests) (void)memo.Score(CycleState(r), views, nullptr);
    for (int round = 0; round < 3; ++round) {
      for (const PodGpuRequest& r : requests) {
        const uint64_t before = memo.counters().nodes_computed;
        EXPECT_EQ(memo.Score(CycleState(r), views, nullptr), profile->Score(CycleState(r), views, nullptr)) << c.name;
        EXPECT_EQ(memo.counters().nodes_computed - before, c.computed_per_request_after_warmup) << c.name;
      }
    }
  }
}

TEST(ScoreMemoTest, OldVersionsAreSweptSoTheMemoStaysBounded) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls);
  const ScoreMemo memo(profile);
  ClusterModel model;
  Fill(model, 4);
  const CycleState pod(Pod().Fraction(100));
  // Every round renews every node: without the sweep the memo would keep
  // 4 × 200 versions.
  size_t most = 0;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 4; ++i) model.UpsertPod(Holding(absl::StrCat("p", i), NodeName(i), round % 4, 100));
    const std::vector<const NodeView*> views = Views(*model.Publish());
    ASSERT_EQ(memo.Score(pod, views, nullptr), profile->Score(pod, views, nullptr));
    most = std::max(most, memo.memoized_nodes());
  }
  EXPECT_LE(most, ScoreMemo::MaxEntries(4));
  EXPECT_GT(most, 4u);  // old versions were kept a while: the sweep is amortised
}

TEST(ScoreMemoHolderTest, HandsItsPoolToTheMemosItMakes) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls);
  WorkerPool pool(2);
  ScoreMemoHolder holder(&pool);
  ClusterModel model;
  Fill(model, 600);
  const std::vector<const NodeView*> views = Views(*model.Publish());
  const CycleState pod(Pod().Fraction(250));
  ScoreMemo::Counters call;
  EXPECT_EQ(holder.For(profile)->Score(pod, views, nullptr, &call), profile->Score(pod, views, nullptr));
  EXPECT_EQ(call.nodes_computed, 600u);
  EXPECT_EQ(call.nodes_computed_in_parallel, 600u);
  EXPECT_EQ(holder.For(profile)->counters().nodes_computed_in_parallel, 600u);
}

TEST(ScoreMemoHolderTest, ANewProfileStartsAFreshMemo) {
  std::atomic<int> calls{0};
  const auto first = MakeProfile(&calls), second = MakeProfile(&calls);
  ScoreMemoHolder holder;
  const std::shared_ptr<const ScoreMemo> memo = holder.For(first);
  EXPECT_EQ(holder.For(first), memo);
  const std::shared_ptr<const ScoreMemo> reloaded = holder.For(second);
  EXPECT_NE(reloaded, memo);
  EXPECT_EQ(reloaded->profile(), second);
  EXPECT_NE(holder.For(first), reloaded);  // back to the first: fresh again, nothing of the second kept
}

TEST(ScoreMemoHolderTest, KeepsAMemoPerProfileOfThePolicyAndDropsThoseOfAReloadedOne) {
  std::atomic<int> calls{0};
  const auto training = MakeProfile(&calls), inference = MakeProfile(&calls), fallback = MakeProfile(&calls);
  absl::StatusOr<std::shared_ptr<const ProfileSet>> policy = ProfileSet::Create(
      fallback, {PoolPolicy{.name = "train", .task_types = {"training"}, .exclusive = false, .profile = training},
                 PoolPolicy{.name = "serve", .task_types = {"inference"}, .exclusive = false, .profile = inference}});
  ASSERT_TRUE(policy.ok()) << policy.status();
  ScoreMemoHolder holder;
  const std::shared_ptr<const ScoreMemo> train_memo = holder.For(**policy, training);
  const std::shared_ptr<const ScoreMemo> serve_memo = holder.For(**policy, inference);
  EXPECT_EQ(train_memo->profile(), training);
  EXPECT_EQ(serve_memo->profile(), inference);
  // Pods of the two pools alternate: each keeps its memo.
  EXPECT_EQ(holder.For(**policy, training), train_memo);
  EXPECT_EQ(holder.For(**policy, inference), serve_memo);
  EXPECT_EQ(holder.For(**policy, fallback)->profile(), fallback);
  EXPECT_EQ(holder.For(**policy, training), train_memo);

  // A reload: new profiles, and nothing of the old policy's answers is kept.
  const auto reloaded = MakeProfile(&calls);
  const std::shared_ptr<const ProfileSet> next = ProfileSet::Single(reloaded);
  EXPECT_EQ(holder.For(*next, reloaded)->profile(), reloaded);
  EXPECT_EQ(train_memo.use_count(), 1) << "the holder let the old pool's memo go";
}

TEST(ScoreMemoTest, ConcurrentRequestsAnswerAsProfileScore) {
  std::atomic<int> calls{0};
  const auto profile = MakeProfile(&calls);
  const ScoreMemo memo(profile);
  ClusterModel model;
  Fill(model, 40);
  model.Publish();
  constexpr int kReaders = 4, kRequestsEach = 300;
  std::atomic<int> running{kReaders};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      const CycleState pod(t % 2 == 0 ? Pod().Fraction(250) : Pod().Fraction(500));
      for (int i = 0; i < kRequestsEach; ++i) {
        const auto snapshot = model.Current();
        const std::vector<const NodeView*> views = Views(*snapshot);
        if (memo.Score(pod, views, nullptr) != profile->Score(pod, views, nullptr)) mismatches.fetch_add(1);
      }
      running.fetch_sub(1);
    });
  }
  // Binds land while the readers prioritize.
  for (int round = 0; running.load() > 0; ++round) {
    model.UpsertPod(Holding(absl::StrCat("pod-", round % 50), NodeName(round % 40), round % 4, 100));
    model.Publish();
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  const ScoreMemo::Counters counters = memo.counters();
  EXPECT_GT(counters.nodes_reused, 0u);
}

}  // namespace
}  // namespace tessera
