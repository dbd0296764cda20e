// The replay loop: the paper's protocol on clusters small enough to follow,
// and the memo giving exactly what evaluating every node gives.
#include "sim/replay.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/policy_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "sim/experiment.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

constexpr const char* kPlacement = TESSERA_SOURCE_DIR "/config/examples/placement/";

std::shared_ptr<const Profile> PolicyText(const std::string& plugins) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyText("apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n" + plugins, "policy.yaml", registry);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : nullptr;
}

std::shared_ptr<const Profile> PolicyFile(const std::string& name, const std::vector<WorkloadPod>* typical = nullptr) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyForTrace(std::string(kPlacement) + name + "-policy.yaml", registry, typical);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : nullptr;
}

TraceNode GpuNode(std::string name, int32_t gpus, int64_t cpu = 96000) {
  return TraceNode{std::move(name), cpu, 393216, gpus, "G2"};
}

TracePod GpuPod(std::string name, int32_t gpus, int64_t milli, int64_t cpu = 1000) {
  TracePod p;
  p.name = std::move(name);
  p.cpu_milli = cpu;
  p.memory_mib = 1024;
  p.gpus = gpus;
  p.gpu_milli = milli;
  return p;
}

// A run of `pods` in list order with the given node ranks.
ReplayResult RunInOrder(const Profile& profile, const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                 std::vector<uint32_t> rank, MemoMode memo = MemoMode::kAuto,
                 const WorkloadLearning* learning = nullptr) {
  const Cluster cluster(nodes);
  const PodClasses classes = ClassifyPods(pods);
  RunWorkload w;
  for (uint32_t i = 0; i < pods.size(); ++i) w.pods.push_back(i);
  w.originals = pods.size();
  w.node_rank = std::move(rank);
  return Replay(ReplayInput{.profile = &profile, .empty_cluster = &cluster, .pods = &pods, .classes = &classes,
                            .workload = &w, .typical = nullptr, .seed = 1, .memo = memo, .keep_cluster = false,
                            .learning = learning});
}

TEST(ReplayTest, EqualScoresGoToTheNodeWithTheLowestRank) {
  const std::shared_ptr<const Profile> profile = PolicyText("  - name: gpu-fit\n");  // no score: every node ties
  const std::vector<TraceNode> nodes = {GpuNode("a", 1), GpuNode("b", 1), GpuNode("c", 2)};
  const std::vector<TracePod> pods = {GpuPod("p", 1, 1000), GpuPod("q", 1, 1000), GpuPod("r", 2, 1000)};
  // Ranks b, c, a: the single-GPU pods land on b and c, and the 2-GPU pod finds no node.
  const ReplayResult by_rank = RunInOrder(*profile, nodes, pods, {2, 0, 1});
  EXPECT_EQ(by_rank.placed_pods, 2);
  EXPECT_EQ(by_rank.failed_pods[static_cast<size_t>(PodKind::kMultiGpu)], 1);
  // Ranks a, b, c: they land on a and b, and c keeps both GPUs for it.
  EXPECT_EQ(RunInOrder(*profile, nodes, pods, {0, 1, 2}).placed_pods, 3);
}

TEST(ReplayTest, APodThatFitsNowhereFailsAndIsRecordedAsArrivedAnyway) {
  const std::shared_ptr<const Profile> profile = PolicyText("  - name: host-resources\n  - name: gpu-fit\n");
  const std::vector<TraceNode> nodes = {GpuNode("a", 1, 4000)};
  const std::vector<TracePod> pods = {GpuPod("cpu-hungry", 1, 500, 8000), GpuPod("half", 1, 500),
                                      GpuPod("too-big", 2, 1000), GpuPod("cpu-only", 0, 0, 2000)};
  const ReplayResult r = RunInOrder(*profile, nodes, pods, {0});
  ASSERT_EQ(r.events.size(), 4u);
  EXPECT_EQ(r.events[0].arrived_milli, 500);
  EXPECT_EQ(r.events[0].used_milli, 0) << "8 cores asked, 4 on the node";
  EXPECT_EQ(r.events[1].used_milli, 500);
  EXPECT_EQ(r.events[2].arrived_milli, 3000);
  EXPECT_EQ(r.events[3].used_milli, 500);
  EXPECT_EQ(r.placed_pods, 2);
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kShare)], 1);
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kMultiGpu)], 1);
  EXPECT_EQ(r.failed_milli[static_cast<size_t>(PodKind::kMultiGpu)], 2000);
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kCpuOnly)], 0);
}

TEST(ReplayTest, ScoresKeepThePluginResolutionNotTheWires) {
  // dot-product scores 96 on `roomy` and 98 on `tight`: both 10 on the
  // wire's 0..10, where rank would pick `roomy`. At plugin resolution `tight`
  // wins, which leaves `roomy` the 90 cores the second pod needs.
  const std::shared_ptr<const Profile> profile = PolicyText("  - name: host-resources\n  - name: gpu-fit\n  - name: dot-product\n");
  const std::vector<TraceNode> nodes = {GpuNode("roomy", 2, 96000), GpuNode("tight", 2, 16000)};
  const ReplayResult r = RunInOrder(*profile, nodes, {GpuPod("p", 1, 1000, 8000), GpuPod("q", 1, 1000, 90000)}, {0, 1});
  EXPECT_EQ(r.placed_pods, 2);
}

TEST(ReplayTest, TheMemoGivesWhatEvaluatingEveryNodeGives) {
  absl::StatusOr<std::vector<TraceNode>> nodes = LoadNodeList(testing::OpenbPath("openb_node_list_gpu_node.csv"));
  absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(testing::OpenbPath("openb_pod_list_default.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_TRUE(pods.ok()) << pods.status();
  const std::vector<WorkloadPod> typical = TypicalPods(*pods, 95);
  const std::shared_ptr<const Profile> profile = PolicyFile("fgd", &typical);
  const Cluster cluster(*nodes);
  const PodClasses classes = ClassifyPods(*pods);
  RunWorkload w = MakeRunWorkload(*pods, cluster.size(), cluster.capacity_milli(), 130, 42);
  w.pods.resize(800);  // enough to change many nodes, few enough for sanitizer builds
  ReplayInput in{.profile = profile.get(), .empty_cluster = &cluster, .pods = &*pods, .classes = &classes,
                 .workload = &w, .typical = nullptr, .seed = 42, .memo = MemoMode::kAuto};
  const ReplayResult memoised = Replay(in);
  in.memo = MemoMode::kOff;
  const ReplayResult every_node = Replay(in);
  EXPECT_TRUE(memoised.memoised);
  EXPECT_FALSE(every_node.memoised);
  ASSERT_EQ(memoised.events.size(), every_node.events.size());
  for (size_t i = 0; i < memoised.events.size(); ++i) {
    ASSERT_EQ(memoised.events[i].used_milli, every_node.events[i].used_milli) << "after pod " << i;
  }
}

TEST(ReplayTest, APolicyThatRandomisesPerPodIsNotMemoised) {
  absl::StatusOr<std::vector<TraceNode>> nodes = LoadNodeList(testing::OpenbPath("openb_node_list_gpu_node.csv"));
  absl::StatusOr<std::vector<TracePod>> pods = LoadPodList(testing::OpenbPath("openb_pod_list_default.csv"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_TRUE(pods.ok()) << pods.status();
  const Cluster cluster(*nodes);
  const PodClasses classes = ClassifyPods(*pods);
  EXPECT_TRUE(AnswersDependOnSalt(*PolicyFile("random"), cluster, classes));
  EXPECT_FALSE(AnswersDependOnSalt(*PolicyFile("best-fit"), cluster, classes));
  EXPECT_FALSE(AnswersDependOnSalt(*PolicyText("  - name: gpu-fit\n    args: {gpuSelection: best}\n"), cluster, classes));
  EXPECT_TRUE(AnswersDependOnSalt(*PolicyText("  - name: gpu-fit\n    args: {gpuSelection: random}\n"), cluster, classes))
      << "a random GPU choice alone is enough";
}

TEST(PodClassesTest, PodsAskingTheSameShareOneRequest) {
  std::vector<TracePod> pods = {GpuPod("a", 1, 500), GpuPod("b", 1, 500), GpuPod("c", 1, 1000), GpuPod("d", 0, 0)};
  pods[1].models = {"T4"};
  pods[1].gpu_spec = "T4";
  const PodClasses classes = ClassifyPods(pods);
  EXPECT_EQ(classes.requests.size(), 4u);
  EXPECT_THAT(classes.kinds, ::testing::ElementsAre(PodKind::kShare, PodKind::kShare, PodKind::kOneGpu, PodKind::kCpuOnly));
  const PodGpuRequest& share = classes.requests[0];
  EXPECT_FALSE(share.whole_gpu);
  EXPECT_EQ(share.guaranteed.value(), 500);
  EXPECT_EQ(share.host.cpu.value(), 1000);
  EXPECT_EQ(share.host.memory.value(), 1024);
  EXPECT_TRUE(classes.requests[2].whole_gpu);
  EXPECT_EQ(classes.requests[3].count, 0);
  pods.push_back(GpuPod("e", 1, 500));
  EXPECT_EQ(ClassifyPods(pods).class_of[4], 0u);
}

TEST(ReplayTest, LearningPutsMixesInForceOnScheduleAndTheMemoFollowsThem) {
  // The prior says whole GPUs; the arrivals are mostly quarters and halves.
  const std::shared_ptr<const Profile> profile = PolicyText(
      "  - name: host-resources\n"
      "  - name: fgd\n    weight: 100\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n"
      "  - name: host-stranding\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n");
  const std::vector<TraceNode> nodes = {GpuNode("a", 8, 16000), GpuNode("b", 8, 64000), GpuNode("c", 4, 96000)};
  std::vector<TracePod> pods;
  for (int i = 0; i < 40; ++i) {
    const int64_t milli = i % 3 == 0 ? 250 : i % 3 == 1 ? 500 : 1000;
    pods.push_back(GpuPod(absl::StrCat("p", i), 1, milli, 1000 + 500 * (i % 4)));
  }
  const WorkloadLearning learning{.window_pods = 100, .warmup_pods = 10, .publish_every_pods = 5};
  const ReplayResult memoised = RunInOrder(*profile, nodes, pods, {0, 1, 2}, MemoMode::kAuto, &learning);
  EXPECT_TRUE(memoised.memoised);
  EXPECT_EQ(memoised.learned_mixes, 11);  // warming up after pods 1, 2, 4, 8; then 10, 15, ..., 40
  // Every node is evaluated anew under each mix: the memo gives what evaluating everything gives.
  const ReplayResult full = RunInOrder(*profile, nodes, pods, {0, 1, 2}, MemoMode::kOff, &learning);
  ASSERT_EQ(memoised.events.size(), full.events.size());
  for (size_t i = 0; i < full.events.size(); ++i) {
    EXPECT_EQ(memoised.events[i].used_milli, full.events[i].used_milli) << "pod " << i;
  }
  const WorkloadLearning off{.enabled = false};
  EXPECT_EQ(RunInOrder(*profile, nodes, pods, {0, 1, 2}, MemoMode::kAuto, &off).learned_mixes, 0);
}

TEST(ReplayTest, ALearnedMixKnowsTheClustersGpuModelsAndWhichAreScarce) {
  // As the server's mixes do (extender/program.cc): host stranding's gate
  // on nodes some kind cannot use reads them (policies/fgd/fragmentation.h).
  const std::shared_ptr<const Profile> profile = PolicyText(
      "  - name: host-resources\n"
      "  - name: fgd\n    weight: 100\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n"
      "  - name: host-stranding\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n");
  std::vector<TraceNode> nodes = {GpuNode("a", 8), GpuNode("b", 8), GpuNode("c", 2)};
  nodes[2].model = "T4";
  // One pod in four takes T4 only: a quarter of what is asked, where T4 is
  // a ninth of the GPUs, is more than half of T4.
  std::vector<TracePod> pods;
  for (int i = 0; i < 12; ++i) {
    pods.push_back(GpuPod(absl::StrCat("p", i), 1, 500));
    if (i % 4 == 0) pods.back().models = {"T4"};
  }
  const WorkloadLearning learning{.window_pods = 100, .warmup_pods = 4, .publish_every_pods = 4};
  const ReplayResult r = RunInOrder(*profile, nodes, pods, {0, 1, 2}, MemoMode::kAuto, &learning);
  ASSERT_NE(r.last_learned_mix, nullptr);
  const std::vector<TargetWorkload::ModelGpus> models = {{"G2", 16}, {"T4", 2}};
  EXPECT_EQ(r.last_learned_mix->cluster_gpu_models(), models);
  EXPECT_THAT(r.last_learned_mix->scarce_models(), ::testing::ElementsAre("T4"));
}

TEST(ReplayTest, ALearnedMixKnowsTheIdleNodesAndFreeGpuAsTheyWereWhenItWasLearned) {
  // The kinds that take whole nodes are judged by the idle nodes left
  // (policies/fgd/host_stranding.h): a mix told the empty cluster's would keep
  // reserving nodes long gone.
  const std::shared_ptr<const Profile> profile = PolicyText(
      "  - name: host-resources\n"
      "  - name: fgd\n    weight: 100\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n"
      "  - name: host-stranding\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n");
  const std::vector<TraceNode> nodes = {GpuNode("a", 8), GpuNode("b", 8), GpuNode("c", 2)};
  std::vector<TracePod> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(GpuPod(absl::StrCat("p", i), 1, 1000));
  const WorkloadLearning learning{.window_pods = 100, .warmup_pods = 2, .publish_every_pods = 2};
  const ReplayResult r = RunInOrder(*profile, nodes, pods, {0, 1, 2}, MemoMode::kAuto, &learning);
  ASSERT_NE(r.last_learned_mix, nullptr);  // learned after the fourth pod
  EXPECT_EQ(r.last_learned_mix->cluster_free_milli(), 18000 - 4000);
  int64_t idle_gpus = 0;
  for (const TargetWorkload::IdleNodes& idle : r.last_learned_mix->cluster_idle_nodes()) {
    idle_gpus += idle.gpus * idle.nodes;
    EXPECT_EQ(idle.cpu_free, 96000) << "a node a pod took CPU of is no longer idle";
  }
  EXPECT_LE(idle_gpus, 18 - 4);
  EXPECT_LT(idle_gpus, 18) << "some node holds a pod";
}

TEST(ReplayTest, BetweenTwoMixesTheMixInForceIsToldTheClusterAnewWhereTheReserveOpens) {
  // host-stranding expects a few 8-GPU pods asking 8 cores. Pods asking 90
  // of an idle node's 96 cores leave every node idle but too short of CPU
  // for them. No mix is due after the first arrival (warm-up) for 1000
  // arrivals: only a mix re-told the cluster sees the reserve open.
  const std::shared_ptr<const Profile> profile = PolicyText(
      "  - name: host-resources\n"
      "  - name: fgd\n    weight: 100\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n"
      "  - name: host-stranding\n    args: {workload: [\"30 cpu=1 gpu=1\", \"1 cpu=8 gpu=8\"]}\n");
  std::vector<TraceNode> nodes;
  std::vector<uint32_t> rank;
  for (uint32_t i = 0; i < 16; ++i) {
    nodes.push_back(GpuNode(absl::StrCat("n", i), 8));
    rank.push_back(i);
  }
  std::vector<TracePod> pods = {GpuPod("gpu", 1, 1000)};
  for (int i = 0; i < 20; ++i) pods.push_back(GpuPod(absl::StrCat("cpu", i), 0, 0, 90000));
  const WorkloadLearning learning{
      .window_pods = 1000, .warmup_pods = 1, .publish_every_pods = 1000, .prior_percent = 50};
  const ReplayResult r = RunInOrder(*profile, nodes, pods, rank, MemoMode::kAuto, &learning);
  EXPECT_EQ(r.learned_mixes, 1);
  EXPECT_EQ(r.retellings, 1);  // at the 21st arrival, the first the replay re-tells at
  const WorkloadLearning off{.enabled = false};
  EXPECT_EQ(RunInOrder(*profile, nodes, pods, rank, MemoMode::kAuto, &off).retellings, 0);
}

}  // namespace
}  // namespace tessera::sim
