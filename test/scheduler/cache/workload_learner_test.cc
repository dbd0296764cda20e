#include "scheduler/cache/workload_learner.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Pod;

WorkloadPod Kind(const std::string& text) {
  absl::StatusOr<WorkloadPod> k = ParseWorkloadPod(text);
  EXPECT_TRUE(k.ok()) << text << ": " << k.status();
  return *k;
}

std::vector<std::string> Texts(const std::vector<WorkloadPod>& mix) {
  std::vector<std::string> out;
  for (const WorkloadPod& p : mix) out.push_back(FormatWorkloadPod(p));
  return out;
}

TEST(WorkloadKindOfTest, TellsApartWhatTheMeasureTellsApart) {
  struct Case {
    const char* name;
    PodGpuRequest request;
    std::optional<std::string> kind;
  };
  const Case cases[] = {
      {"a share of one GPU is its guaranteed milli", Pod().Fraction(250).Limit(800).Cpu(4000), "1 cpu=4000m gpu=250m"},
      {"a whole GPU is 1000 milli", Pod().Cpu(8000), "1 cpu=8000m gpu=1"},
      {"several whole GPUs keep their count", Pod().Count(4).Cpu(32000), "1 cpu=32000m gpu=4"},
      {"a pod without GPUs is a CPU-only kind", Pod().Count(0).Cpu(2000), "1 cpu=2000m"},
      {"accepted models are part of the kind", Pod().Models({"V100M32"}).Cpu(1000), "1 cpu=1000m gpu=1 models=V100M32"},
      {"a share's GPU memory is part of its kind", Pod().Fraction(500).Memory(12288).Cpu(1000),
       "1 cpu=1000m gpu=500m gpumem=12288Mi"},
      {"a whole GPU holds all its memory whatever it asks", Pod().Memory(12288).Cpu(1000), "1 cpu=1000m gpu=1"},
      {"a MIG instance is no kind of the measure", Pod().MigProfile("1g.10gb").Cpu(1000), std::nullopt},
  };
  for (const Case& c : cases) {
    std::optional<WorkloadPod> kind = WorkloadKindOf(c.request);
    ASSERT_EQ(kind.has_value(), c.kind.has_value()) << c.name;
    if (kind) {
      EXPECT_EQ(FormatWorkloadPod(*kind), *c.kind) << c.name;
    }
  }
}

TEST(ArrivalWindowTest, CountsEachKindAndDropsWhatLeftTheWindow) {
  ArrivalWindow window(4);
  for (const char* k : {"1 cpu=1 gpu=1", "1 cpu=1 gpu=1", "1 cpu=2 gpu=500m", "1 cpu=3"}) window.Add(Kind(k));
  EXPECT_THAT(Texts(window.Mix(100, 10)),
              ::testing::ElementsAre("2 cpu=1000m gpu=1", "1 cpu=2000m gpu=500m", "1 cpu=3000m"));
  // Two more arrivals push both whole-GPU pods out.
  window.Add(Kind("1 cpu=3"));
  window.Add(Kind("1 cpu=3"));
  EXPECT_EQ(window.size(), 4u);
  EXPECT_EQ(window.arrivals(), 6);
  EXPECT_EQ(window.kinds(), 2u);
  EXPECT_THAT(Texts(window.Mix(100, 10)), ::testing::ElementsAre("3 cpu=3000m", "1 cpu=2000m gpu=500m"));
}

TEST(ArrivalWindowTest, SharesAskingDifferentGpuMemoryAreDifferentKinds) {
  ArrivalWindow window(4);
  for (const char* k : {"1 cpu=1 gpu=500m gpumem=8Gi", "1 cpu=1 gpu=500m gpumem=8Gi", "1 cpu=1 gpu=500m gpumem=12Gi"}) {
    window.Add(Kind(k));
  }
  EXPECT_THAT(Texts(window.Mix(100, 10)), ::testing::ElementsAre("2 cpu=1000m gpu=500m gpumem=8192Mi",
                                                                 "1 cpu=1000m gpu=500m gpumem=12288Mi"));
}

TEST(ArrivalWindowTest, MixKeepsTheCommonestKindsUpToCoverageAndCount) {
  ArrivalWindow window(100);
  for (int i = 0; i < 60; ++i) window.Add(Kind("1 cpu=1 gpu=1"));
  for (int i = 0; i < 30; ++i) window.Add(Kind("1 cpu=2 gpu=250m"));
  for (int i = 0; i < 10; ++i) window.Add(Kind("1 cpu=4"));
  struct Case {
    const char* name;
    int64_t coverage;
    size_t max_kinds;
    size_t kinds;
  };
  const Case cases[] = {
      {"60% is covered by the commonest kind alone", 60, 10, 1},
      {"61% needs the second", 61, 10, 2},
      {"all of it needs all three", 100, 10, 3},
      {"the kind limit stops before coverage", 100, 2, 2},
  };
  for (const Case& c : cases) EXPECT_EQ(window.Mix(c.coverage, c.max_kinds).size(), c.kinds) << c.name;
}

TEST(ArrivalWindowTest, EqualCountsAreOrderedByTheKindNotByArrival) {
  ArrivalWindow a(10), b(10);
  for (const char* k : {"1 cpu=1", "1 cpu=1 gpu=1", "1 cpu=1 gpu=500m"}) a.Add(Kind(k));
  for (const char* k : {"1 cpu=1 gpu=500m", "1 cpu=1", "1 cpu=1 gpu=1"}) b.Add(Kind(k));
  EXPECT_EQ(Texts(a.Mix(100, 10)), Texts(b.Mix(100, 10)));
  EXPECT_THAT(Texts(a.Mix(100, 10)),
              ::testing::ElementsAre("1 cpu=1000m gpu=1", "1 cpu=1000m gpu=500m", "1 cpu=1000m"));
}

TEST(MixLearnerTest, FadesThePriorOutOverWarmUpThenPublishesEveryNArrivals) {
  MixLearner learner(WorkloadLearning{.window_pods = 100, .warmup_pods = 10, .publish_every_pods = 5});
  std::vector<int> due_at;
  std::vector<int64_t> prior_percent;
  for (int i = 1; i <= 21; ++i) {
    learner.Add(Kind(i <= 10 ? "1 cpu=1 gpu=1" : "1 cpu=2 gpu=500m"));
    const bool due = learner.due();
    std::shared_ptr<const TargetWorkload> mix = learner.DueMix();
    EXPECT_EQ(mix != nullptr, due) << "at " << i;
    if (mix == nullptr) continue;
    due_at.push_back(i);
    prior_percent.push_back(mix->prior_percent());
  }
  // Warming up at 1, 2, 4, 8 arrivals, the prior at 100 − 95 · arrivals ÷ 10 %; from 10 on, 5 %.
  EXPECT_THAT(due_at, ::testing::ElementsAre(1, 2, 4, 8, 10, 15, 20));
  EXPECT_THAT(prior_percent, ::testing::ElementsAre(91, 81, 62, 24, 5, 5, 5));
}

TEST(MixLearnerTest, WarmingUpABurstThatSkipsAPowerOfTwoStillPublishesOnceTheArrivalsDoubled) {
  // The server folds in a second's arrivals at once: 3, 5, 6, 11, 12, 24 in all.
  MixLearner learner(WorkloadLearning{.window_pods = 100, .warmup_pods = 100, .publish_every_pods = 5});
  std::vector<int> due_at;
  int arrivals = 0;
  for (int burst : {3, 2, 1, 5, 1, 12}) {
    for (int i = 0; i < burst; ++i) learner.Add(Kind("1 cpu=1 gpu=1"));
    arrivals += burst;
    if (learner.DueMix() != nullptr) due_at.push_back(arrivals);
  }
  EXPECT_THAT(due_at, ::testing::ElementsAre(3, 6, 12, 24));  // not at 5 nor 11: not yet doubled
}

TEST(MixLearnerTest, LearnsNothingWhenDisabled) {
  MixLearner learner(WorkloadLearning{.enabled = false, .window_pods = 100, .warmup_pods = 1});
  learner.Add(Kind("1 cpu=1 gpu=1"));
  EXPECT_EQ(learner.DueMix(), nullptr);
}

TEST(MixLearnerTest, FollowsAShiftOnceHalfTheWindowIsTheNewKind) {
  MixLearner learner(WorkloadLearning{.window_pods = 100, .warmup_pods = 100, .publish_every_pods = 1});
  for (int i = 0; i < 100; ++i) learner.Add(Kind("1 cpu=4 gpu=250m"));  // inference by day
  ASSERT_NE(learner.DueMix(), nullptr);
  for (int i = 0; i < 51; ++i) learner.Add(Kind("1 cpu=32 gpu=8"));     // training by night
  std::shared_ptr<const TargetWorkload> mix = learner.DueMix();
  ASSERT_NE(mix, nullptr);
  EXPECT_EQ(FormatWorkloadPod(mix->pods().front()), "51 cpu=32000m gpu=8");
}

TEST(MixLearnerTest, RetellsTheLastMixTheClusterAsItIsNowWithoutLearningAgain) {
  MixLearner learner(WorkloadLearning{.window_pods = 100, .warmup_pods = 4, .publish_every_pods = 10});
  EXPECT_EQ(learner.Retold({}), nullptr) << "no mix given out yet";
  const TargetWorkload::IdleNodes two = {.gpus = 8, .cpu_free = 96000, .model = "G2", .nodes = 2};
  std::shared_ptr<const TargetWorkload> mix;
  for (int i = 0; i < 4; ++i) {
    learner.Add(Kind("1 cpu=8 gpu=8"));
    if (learner.due()) {
      mix = learner.DueMix({.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = {two}, .free_milli = 16000});
    }
  }
  ASSERT_NE(mix, nullptr);  // at 4 arrivals, the end of warm-up
  learner.Add(Kind("1 cpu=1 gpu=1"));
  ASSERT_FALSE(learner.due());
  const TargetWorkload::IdleNodes one = {.gpus = 8, .cpu_free = 96000, .model = "G2", .nodes = 1};
  const std::shared_ptr<const TargetWorkload> retold =
      learner.Retold({.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = {one}, .free_milli = 7000});
  ASSERT_NE(retold, nullptr);
  EXPECT_EQ(retold->pods(), mix->pods()) << "the same kinds: the fifth arrival is learned when a mix is due";
  EXPECT_EQ(retold->prior_percent(), mix->prior_percent());
  EXPECT_THAT(retold->cluster_idle_nodes(), ::testing::ElementsAre(one));
  EXPECT_EQ(retold->cluster_free_milli(), 7000);
  EXPECT_FALSE(learner.due()) << "re-telling is no publication";
}

WorkloadLearning Small() { return WorkloadLearning{.window_pods = 100, .warmup_pods = 3, .publish_every_pods = 1}; }

TEST(WorkloadLearnerTest, APodFilteredAgainCountsOnce) {
  WorkloadLearner learner(Small());
  for (int retry = 0; retry < 5; ++retry) learner.Observe("uid-a", Pod().Cpu(1000));
  learner.Observe("uid-b", Pod().Cpu(1000));
  std::shared_ptr<const TargetWorkload> warming = learner.Learn(Small());
  ASSERT_NE(warming, nullptr);  // two pods: warming up, the prior still most of it
  EXPECT_EQ(learner.Status().arrivals, 2);
  EXPECT_THAT(Texts(warming->pods()), ::testing::ElementsAre("2 cpu=1000m gpu=1"));
  EXPECT_EQ(warming->prior_percent(), 100 - 95 * 2 / 3);
  learner.Observe("uid-a", Pod().Cpu(1000));
  learner.Observe("uid-c", Pod().Fraction(500).Cpu(2000));
  std::shared_ptr<const TargetWorkload> mix = learner.Learn(Small());
  ASSERT_NE(mix, nullptr);
  EXPECT_EQ(learner.Status().arrivals, 3);
  EXPECT_THAT(Texts(mix->pods()), ::testing::ElementsAre("2 cpu=1000m gpu=1", "1 cpu=2000m gpu=500m"));
  EXPECT_EQ(mix->prior_percent(), 5);
  EXPECT_EQ(learner.Status().learned, mix);
  EXPECT_EQ(learner.Status().publications, 2);
}

TEST(WorkloadLearnerTest, AMixReToldAndPutInForceIsShownAsTheMixLearnedAndCounted) {
  WorkloadLearner learner(Small());
  EXPECT_EQ(learner.Retold({}), nullptr);
  for (const char* uid : {"a", "b", "c"}) learner.Observe(uid, Pod().Cpu(1000));
  std::shared_ptr<const TargetWorkload> mix;
  while (std::shared_ptr<const TargetWorkload> next = learner.Learn(Small())) mix = next;
  ASSERT_NE(mix, nullptr);
  const std::shared_ptr<const TargetWorkload> retold =
      learner.Retold({.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = {}, .free_milli = 5000});
  ASSERT_NE(retold, nullptr);
  EXPECT_EQ(retold->pods(), mix->pods());
  EXPECT_EQ(learner.Status().retellings, 0);
  const int64_t publications = learner.Status().publications;
  learner.Adopt(retold);
  EXPECT_EQ(learner.Status().learned, retold);
  EXPECT_EQ(learner.Status().retellings, 1);
  EXPECT_EQ(learner.Status().publications, publications) << "nothing was learned";
}

TEST(WorkloadLearnerTest, PodsWithoutUidAlwaysCount) {
  WorkloadLearner learner(Small());
  for (int i = 0; i < 3; ++i) learner.Observe("", Pod().Cpu(1000));
  EXPECT_NE(learner.Learn(Small()), nullptr);
  EXPECT_EQ(learner.Status().arrivals, 3);
}

TEST(WorkloadLearnerTest, NewSettingsStartTheWindowOver) {
  WorkloadLearner learner(Small());
  for (const char* uid : {"a", "b", "c"}) learner.Observe(uid, Pod().Cpu(1000));
  ASSERT_NE(learner.Learn(Small()), nullptr);
  WorkloadLearning wider = Small();
  wider.window_pods = 200;
  EXPECT_EQ(learner.Learn(wider), nullptr);
  EXPECT_EQ(learner.Status().arrivals, 0);
  EXPECT_EQ(learner.Status().learned, nullptr);
  EXPECT_EQ(learner.Status().settings.window_pods, 200);
}

TEST(WorkloadLearnerTest, ABurstBeyondTheBufferIsDroppedAndCounted) {
  WorkloadLearner learner(Small());
  for (size_t i = 0; i < WorkloadLearner::kMaxPending + 7; ++i) learner.Observe("", Pod().Cpu(1000));
  EXPECT_EQ(learner.Status().dropped, 7);
  (void)learner.Learn(Small());
  EXPECT_EQ(learner.Status().arrivals, static_cast<int64_t>(WorkloadLearner::kMaxPending));
}

}  // namespace
}  // namespace tessera
