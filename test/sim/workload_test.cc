// A run's workload: the shuffled trace, the clones that inflate it to 130%
// of GPU capacity, the node ranks; and the trace's typical pods.
#include "sim/workload.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

constexpr int64_t kCapacity = 6212 * 1000;

// The caller ASSERTs on it: an empty list in its place would have the tests
// index past its end.
absl::StatusOr<std::vector<TracePod>> DefaultTrace() {
  return LoadPodList(testing::OpenbPath("openb_pod_list_default.csv"));
}

TracePod Pod(std::string name, int64_t cpu, int32_t gpus, int64_t milli) {
  TracePod p;
  p.name = std::move(name);
  p.cpu_milli = cpu;
  p.gpus = gpus;
  p.gpu_milli = milli;
  return p;
}

int64_t TotalMilli(const std::vector<TracePod>& pods, const RunWorkload& w) {
  int64_t total = 0;
  for (uint32_t i : w.pods) total += pods[i].total_milli();
  return total;
}

TEST(RandomTest, DrawsUniformlyBelowTheBound) {
  Random random(7);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) ++counts[random.Below(6)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

TEST(RunWorkloadTest, ShufflesEveryTracePodOnceThenAppendsClonesUpTo130Percent) {
  absl::StatusOr<std::vector<TracePod>> trace = DefaultTrace();
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::vector<TracePod>& pods = *trace;
  const RunWorkload w = MakeRunWorkload(pods, 1213, kCapacity, 130, 42);
  ASSERT_EQ(w.originals, pods.size());
  std::vector<uint32_t> originals(w.pods.begin(), w.pods.begin() + static_cast<long>(w.originals));
  std::sort(originals.begin(), originals.end());
  std::vector<uint32_t> identity(pods.size());
  std::iota(identity.begin(), identity.end(), 0u);
  EXPECT_EQ(originals, identity);
  EXPECT_NE(std::vector<uint32_t>(w.pods.begin(), w.pods.begin() + 100),
            std::vector<uint32_t>(identity.begin(), identity.begin() + 100)) << "the originals are shuffled";

  // The note's figure: about 10.8k pods for the default trace.
  EXPECT_GT(w.pods.size(), 10500u);
  EXPECT_LT(w.pods.size(), 11200u);
  // Within the limit, and stopped only when a clone's share would pass it.
  EXPECT_LE(TotalMilli(pods, w), kCapacity * 13 / 10);
  EXPECT_GT(TotalMilli(pods, w), kCapacity * 13 / 10 - 8000);
}

TEST(RunWorkloadTest, NodeRanksAreAPermutation) {
  absl::StatusOr<std::vector<TracePod>> trace = DefaultTrace();
  ASSERT_TRUE(trace.ok()) << trace.status();
  const RunWorkload w = MakeRunWorkload(*trace, 1213, kCapacity, 130, 42);
  std::vector<uint32_t> ranks = w.node_rank;
  std::sort(ranks.begin(), ranks.end());
  for (uint32_t i = 0; i < ranks.size(); ++i) ASSERT_EQ(ranks[i], i);
  EXPECT_NE(w.node_rank[0], 0u);  // seed 42's permutation does not fix node 0 (as it happens)
}

TEST(RunWorkloadTest, TheSameSeedGivesTheSameRunAndAnotherSeedAnother) {
  absl::StatusOr<std::vector<TracePod>> trace = DefaultTrace();
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::vector<TracePod>& pods = *trace;
  const RunWorkload a = MakeRunWorkload(pods, 1213, kCapacity, 130, 42);
  const RunWorkload b = MakeRunWorkload(pods, 1213, kCapacity, 130, 42);
  const RunWorkload c = MakeRunWorkload(pods, 1213, kCapacity, 130, 43);
  EXPECT_EQ(a.pods, b.pods);
  EXPECT_EQ(a.node_rank, b.node_rank);
  EXPECT_NE(a.pods, c.pods);
  EXPECT_NE(a.node_rank, c.node_rank);
}

TEST(RunWorkloadTest, ATraceAboveTheLimitIsOnlyShuffled) {
  const std::vector<TracePod> pods = {Pod("p0", 1000, 1, 1000), Pod("p1", 1000, 1, 1000), Pod("p2", 1000, 1, 1000)};
  const RunWorkload w = MakeRunWorkload(pods, 2, 2000, 130, 1);
  EXPECT_EQ(w.pods.size(), 3u);
}

TEST(TypicalPodsTest, TheDefaultTraceHas35KindsCovering95Percent) {
  absl::StatusOr<std::vector<TracePod>> trace = DefaultTrace();
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::vector<TracePod>& pods = *trace;
  const std::vector<WorkloadPod> typical = TypicalPods(pods, 95);
  ASSERT_EQ(typical.size(), 35u);
  int64_t covered = 0;
  for (const WorkloadPod& p : typical) covered += p.weight;
  EXPECT_EQ(covered, 7766);  // 95.26% of 8152
  // The note's top three: (3.152 cores, 0.81 GPU) 13.5%, (11.3 cores, 1 GPU), (11.4 cores, 1 GPU).
  EXPECT_EQ(typical[0].cpu.value(), 3152);
  EXPECT_EQ(typical[0].milli.value(), 810);
  EXPECT_EQ(typical[0].weight, 1047);
  EXPECT_EQ(typical[1].cpu.value(), 11300);
  EXPECT_EQ(typical[2].cpu.value(), 11400);
  EXPECT_TRUE(std::any_of(typical.begin(), typical.end(),
                          [](const WorkloadPod& p) { return p.gpus == 0 && p.cpu.value() == 12500; }))
      << "CPU-only kinds are typical pods too";
}

TEST(TypicalPodsTest, GpuSpecsAreKindsOfTheirOwn) {
  absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(testing::OpenbPath("openb_pod_list_gpuspec20.csv"));
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(TypicalPods(*pods, 95).size(), 102u);  // the note's figure
}

TEST(TypicalPodsTest, TiesGoToTheLargerKind) {
  const std::vector<TracePod> pods = {Pod("a", 1000, 1, 500), Pod("b", 2000, 1, 500), Pod("c", 2000, 1, 500),
                                      Pod("d", 3000, 0, 0)};
  const std::vector<WorkloadPod> typical = TypicalPods(pods, 60);
  ASSERT_EQ(typical.size(), 2u);
  EXPECT_EQ(typical[0].cpu.value(), 2000);
  EXPECT_EQ(typical[0].weight, 2);
  EXPECT_EQ(typical[1].cpu.value(), 3000) << "of the two kinds seen once, the larger comes first";
}

}  // namespace
}  // namespace tessera::sim
