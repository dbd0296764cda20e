// The score memo under the shipped policies and through ExtenderService.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/framework/recording_answer_cache.h"
#include "scheduler/memo/score_memo.h"
#include "scheduler/memo/worker_pool.h"
#include "scheduler/metrics/metrics.h"
#include "extender/service/extender_service.h"
#include "test/testing/builders.h"
#include "test/testing/function_handle.h"
#include "test/testing/topologies.h"

namespace tessera {
namespace {

using testing::Pod;

std::string ExamplePath(const std::string& name) {
  return absl::StrCat(TESSERA_SOURCE_DIR, "/config/examples/", name);
}

std::shared_ptr<const Profile> LoadExample(const std::string& name) {
  static const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> p = LoadPolicyFile(ExamplePath(name), registry);
  EXPECT_TRUE(p.ok()) << name << ": " << p.status();
  return p.ok() ? *p : nullptr;
}

// Every shipped policy whose plugins all answer from the request and the node alone.
const std::vector<std::string>& MemoizablePolicies() {
  static const std::vector<std::string> policies = {
      "default-policy.yaml",           "binpack-policy.yaml",
      "spread-policy.yaml",            "topology-policy.yaml",
      "placement/best-fit-policy.yaml", "placement/dot-product-policy.yaml",
      "placement/fgd-policy.yaml",      "placement/gpu-clustering-policy.yaml",
      "placement/gpu-packing-policy.yaml", "placement/random-policy.yaml"};
  return policies;
}

TEST(PrioritizeMemoTest, EveryShippedPolicyKeepsItsChoiceAndLoadAwareScoresAnew) {
  for (const std::string& name : MemoizablePolicies()) {
    const auto profile = LoadExample(name);
    ASSERT_NE(profile, nullptr);
    EXPECT_TRUE(profile->memoizable()) << name;
  }
  // load-aware reads live telemetry and the clock: its GPU exclusion and score
  // are asked every time, gpu-share's choice and score are kept.
  const auto load_aware = LoadExample("load-aware-policy.yaml");
  ASSERT_NE(load_aware, nullptr);
  EXPECT_TRUE(load_aware->memoizable());
  EXPECT_TRUE(load_aware->has_gpu_exclusions());
  EXPECT_EQ(load_aware->PluginNames(), (std::vector<std::string>{"gpu-share", "load-aware"}));
}

// A cluster of 8-GPU nodes that changes at random: A100 boxes (a third with
// an NVLink topology), T4 boxes, one node with an unreadable inventory;
// pods with shares and whole GPUs come and go, nodes are replaced.
class ChangingCluster {
 public:
  explicit ChangingCluster(int nodes, uint64_t seed) : nodes_(nodes), rng_(seed) {
    dgx1_ = testing::ParseTopology(testing::kDgx1V100);
    for (int i = 0; i < nodes_; ++i) ReplaceNode(i);
    for (int k = 0; k < 3 * nodes_; ++k) Bind();
  }

  void Change() {
    switch (rng_() % 6) {
      case 0:
      case 1:
      case 2: Bind(); break;
      case 3: Unbind(); break;
      case 4: ReplaceNode(static_cast<int>(rng_() % static_cast<uint64_t>(nodes_))); break;
      case 5: model_.RemoveNode(Name(static_cast<int>(rng_() % static_cast<uint64_t>(nodes_)))); break;
    }
  }

  std::shared_ptr<const ClusterSnapshot> Publish() { return model_.Publish(); }
  std::mt19937_64& rng() { return rng_; }
  ClusterModel& model() { return model_; }
  static std::string Name(int i) { return absl::StrCat("node-", i); }

 private:
  void ReplaceNode(int i) {
    NodeInventory inv;
    inv.source = InventorySource::kAnnotation;
    const bool t4 = rng_() % 4 == 0;
    for (int g = 0; g < 8; ++g) {
      inv.gpus.push_back(GpuDevice{.index = g, .uuid = "", .model = t4 ? testing::kT4 : testing::kA100,
                                   .memory = MemoryMiB(t4 ? 15360 : testing::kA100Mib), .numa = g / 4});
    }
    if (!t4 && rng_() % 3 == 0) inv.topology = dgx1_;
    const absl::Status error = i == 0 ? absl::InvalidArgumentError("unreadable annotation") : absl::OkStatus();
    // Most nodes' host CPU and memory are known (host-resources, fgd and
    // host-stranding weigh them), a few are not.
    std::optional<HostResources> allocatable;
    if (rng_() % 5 != 0) {
      allocatable = HostResources{.cpu_capacity = MilliCpu(t4 ? 32000 : 96000), .cpu_used = MilliCpu(0),
                                  .memory_capacity = MemoryMiB(512 * 1024), .memory_used = MemoryMiB(0)};
    }
    model_.UpsertNode(Name(i), std::move(inv), error, allocatable);
  }
  void Bind() {
    PodHolding pod;
    pod.uid = absl::StrCat("pod-", next_uid_++);
    pod.pod_key = "ns/" + pod.uid;
    pod.assignment.node = Name(static_cast<int>(rng_() % static_cast<uint64_t>(nodes_)));
    pod.host = HostRequest{.cpu = MilliCpu(2000 * static_cast<int64_t>(1 + rng_() % 8)), .memory = MemoryMiB(8192)};
    const bool whole = rng_() % 3 == 0;
    const int gpus = whole ? 1 + static_cast<int>(rng_() % 2) : 1;
    const int32_t first = static_cast<int32_t>(rng_() % 7);
    for (int g = 0; g < gpus; ++g) {
      GpuShare s;
      s.index = first + g;
      s.guaranteed = MilliGpu(whole ? 1000 : 100 * static_cast<int64_t>(1 + rng_() % 5));
      s.limit = s.guaranteed;
      s.memory = s.memory_limit = MemoryMiB(whole ? 15000 : 2048 * static_cast<int64_t>(1 + rng_() % 4));
      pod.assignment.gpus.push_back(s);
    }
    uids_.push_back(pod.uid);
    model_.UpsertPod(std::move(pod));
  }
  void Unbind() {
    if (uids_.empty()) return;
    const size_t k = rng_() % uids_.size();
    model_.RemovePod(uids_[k]);
    uids_.erase(uids_.begin() + static_cast<ptrdiff_t>(k));
  }

  int nodes_;
  std::mt19937_64 rng_;
  std::shared_ptr<const GpuTopology> dgx1_;
  ClusterModel model_;
  std::vector<std::string> uids_;
  int next_uid_ = 0;
};

TEST(PrioritizeMemoTest, AnswersAsProfileScoreUnderEveryShippedPolicyThroughRandomChanges) {
  // As the extender passes a pod without a GPU request.
  const PodGpuRequest cpu_only = Pod().Count(0).Cpu(12000).HostMemory(16384);
  const std::vector<PodGpuRequest> requests = {Pod().Fraction(250).Limit(500).Memory(10240),
                                               Pod().Cpu(8000).HostMemory(16384),
                                               Pod().Count(2),
                                               Pod().Fraction(500).Count(2).Cpu(40000).HostMemory(16384),
                                               Pod().Fraction(300).Models({testing::kA100}),
                                               cpu_only};
  for (const std::string& name : MemoizablePolicies()) {
    const auto profile = LoadExample(name);
    ASSERT_NE(profile, nullptr);
    const ScoreMemo memo(profile);
    ChangingCluster cluster(24, 42);
    for (int round = 0; round < 150; ++round) {
      for (uint64_t k = cluster.rng()() % 3; k > 0; --k) cluster.Change();
      const auto snapshot = cluster.Publish();
      std::vector<const NodeView*> views;
      for (NodeIndex i = 0; i < snapshot->node_count(); ++i) {
        if (cluster.rng()() % 8 != 0) views.push_back(&snapshot->View(i));  // filter passed most nodes
      }
      std::shuffle(views.begin(), views.end(), cluster.rng());
      const CycleState pod(requests[cluster.rng()() % requests.size()]);
      std::vector<std::optional<GpuChoice>> memo_choices, profile_choices;
      ASSERT_EQ(memo.Score(pod, views, &memo_choices), profile->Score(pod, views, &profile_choices))
          << name << ", round " << round;
      ASSERT_EQ(memo_choices, profile_choices) << name << ", round " << round;
    }
    EXPECT_GT(memo.counters().nodes_reused, memo.counters().nodes_computed) << name;
  }
}

TEST(PrioritizeMemoTest, EveryShippedPolicyAnswersAsProfileScoreWithNodesComputedOnAPool) {
  // Enough nodes that every new request shape is computed on the pool: the
  // shipped plugins run on several threads at once.
  WorkerPool pool(3);
  ChangingCluster cluster(640, 13);
  const std::vector<PodGpuRequest> requests = {Pod().Fraction(250).Limit(500).Memory(10240),
                                               Pod().Cpu(8000).HostMemory(16384), Pod().Count(2),
                                               Pod().Fraction(500).Count(2).Cpu(40000).HostMemory(16384)};
  std::vector<std::string> policies = MemoizablePolicies();
  policies.push_back("load-aware-policy.yaml");
  for (const std::string& name : policies) {
    const auto profile = LoadExample(name);
    ASSERT_NE(profile, nullptr);
    const ScoreMemo memo(profile, ScoreMemo::kDefaultRequests, &pool);
    for (int round = 0; round < 8; ++round) {
      cluster.Change();
      const auto snapshot = cluster.Publish();
      std::vector<const NodeView*> views;
      for (NodeIndex i = 0; i < snapshot->node_count(); ++i) views.push_back(&snapshot->View(i));
      const CycleState pod(requests[static_cast<size_t>(round) % requests.size()]);
      std::vector<std::optional<GpuChoice>> memo_choices, profile_choices;
      ASSERT_EQ(memo.Score(pod, views, &memo_choices), profile->Score(pod, views, &profile_choices))
          << name << ", round " << round;
      ASSERT_EQ(memo_choices, profile_choices) << name << ", round " << round;
    }
    EXPECT_GE(memo.counters().nodes_computed_in_parallel, requests.size() * ScoreMemo::kMinParallelNodes) << name;
  }
}

TEST(PrioritizeMemoTest, LoadAwareFollowsTelemetryThatChangesUnderAKeptChoice) {
  // Telemetry never renews a node's version: load-aware's GPU filter and
  // score must still follow it while gpu-share's answers are kept.
  static const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n"
      "  - name: gpu-share\n  - name: load-aware\n    weight: 3\n"
      "    args: {rejectBusyGpus: true, busyThresholdPercent: 70}\n",
      "load-aware-memo.yaml", registry);
  ASSERT_TRUE(profile.ok()) << profile.status();
  const ScoreMemo memo(*profile);
  ChangingCluster cluster(16, 3);
  const std::vector<PodGpuRequest> requests = {Pod().Fraction(250).Memory(10240), Pod().Fraction(500).Count(2),
                                               Pod().Count(1)};
  uint64_t hot_choices_avoided = 0;
  for (int round = 0; round < 120; ++round) {
    if (round % 4 == 0) cluster.Change();
    // New samples on a few nodes: some GPUs hot, some memory in use.
    for (int k = 0; k < 4; ++k) {
      auto t = std::make_shared<NodeTelemetry>();
      t->utilization_window = "1m avg";
      t->sustained_window = "5m avg";
      for (int32_t g = 0; g < 8; ++g) {
        GpuTelemetry& m = t->gpus.emplace_back();
        m.index = g;
        m.sampled_at = absl::Now();
        m.utilization = m.sustained_utilization = PerMille(static_cast<int64_t>(cluster.rng()() % 1000));
        m.memory_used = MemoryMiB(static_cast<int64_t>(cluster.rng()() % 60000));
        m.memory_free = MemoryMiB(81920 - m.memory_used.value());
      }
      cluster.model().SetNodeTelemetry(ChangingCluster::Name(static_cast<int>(cluster.rng()() % 16)), std::move(t));
    }
    const auto snapshot = cluster.Publish();
    std::vector<const NodeView*> views;
    for (NodeIndex i = 0; i < snapshot->node_count(); ++i) views.push_back(&snapshot->View(i));
    const CycleState pod(requests[cluster.rng()() % requests.size()]);
    std::vector<std::optional<GpuChoice>> memo_choices, profile_choices;
    ASSERT_EQ(memo.Score(pod, views, &memo_choices), (*profile)->Score(pod, views, &profile_choices))
        << "round " << round;
    ASSERT_EQ(memo_choices, profile_choices) << "round " << round;
    // The choices before any GPU is ruled out, as a cache would keep them.
    RecordingAnswerCache plain;
    (void)(*profile)->Run(pod, views, RunOptions{.cache = &plain, .filter = false, .parallel_for = nullptr, .min_parallel = 0, .scratch = nullptr},
                          nullptr);
    ASSERT_EQ(plain.answers().size(), views.size());
    for (size_t i = 0; i < views.size(); ++i) {
      const NodeAnswer& answer = plain.answers()[i];
      const std::optional<GpuChoice> before = answer.fits ? std::optional<GpuChoice>(answer.choice) : std::nullopt;
      if (before != memo_choices[i]) ++hot_choices_avoided;
    }
  }
  EXPECT_GT(hot_choices_avoided, 0u) << "the test must exercise GPUs ruled out under a kept choice";
  EXPECT_GT(memo.counters().nodes_reused, memo.counters().nodes_computed);
}

// A prioritize body naming `nodes` for a quarter-GPU pod.
std::string PrioritizeBody(const std::vector<std::string>& nodes) {
  std::string names;
  for (const std::string& n : nodes) absl::StrAppend(&names, names.empty() ? "" : ",", "\"", n, "\"");
  return absl::StrCat(R"({"Pod":{"metadata":{"name":"p","namespace":"ml","uid":"u1","annotations":)",
                      R"({"tessera.io/gpu-fraction":"0.25"}}},"Nodes":null,"NodeNames":[)", names, "]}");
}

// A handle reading the test's own variables at each request: the test may
// point them elsewhere between requests (a new snapshot, a reloaded policy).
testing::FunctionHandle Reading(const std::shared_ptr<const ClusterSnapshot>& snapshot,
                                const std::shared_ptr<const Profile>& profile) {
  testing::FunctionHandle handle;
  handle.snapshot = [&snapshot] { return snapshot; };
  handle.profile = [&profile] { return profile; };
  return handle;
}

TEST(PrioritizeMemoTest, AfterAPolicyReloadPrioritizeAnswersWithTheNewPolicy) {
  ChangingCluster cluster(12, 7);
  const auto snapshot = cluster.Publish();
  std::vector<std::string> nodes;
  for (NodeIndex i = 0; i < snapshot->node_count(); ++i) nodes.push_back(snapshot->node(i).name);
  const std::string body = PrioritizeBody(nodes);

  MetricsRegistry metrics;
  std::shared_ptr<const Profile> in_force = LoadExample("binpack-policy.yaml");
  const testing::FunctionHandle handle = Reading(snapshot, in_force);
  const ExtenderService service(handle, metrics);
  // What a service that never saw another policy answers.
  auto fresh_answer = [&](std::shared_ptr<const Profile> profile) {
    const testing::FunctionHandle fresh_handle = Reading(snapshot, profile);
    const ExtenderService fresh(fresh_handle, metrics);
    return fresh.Prioritize(body);
  };

  const absl::StatusOr<std::string> binpack = service.Prioritize(body);
  ASSERT_TRUE(binpack.ok()) << binpack.status();
  EXPECT_EQ(*service.Prioritize(body), *binpack);  // from the memo this time
  in_force = LoadExample("spread-policy.yaml");
  const absl::StatusOr<std::string> spread = service.Prioritize(body);
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_NE(*spread, *binpack) << "the two policies should rank this cluster differently";
  EXPECT_EQ(*spread, *fresh_answer(in_force));
  in_force = LoadExample("binpack-policy.yaml");  // reloaded back: a new profile object again
  EXPECT_EQ(*service.Prioritize(body), *binpack);
}

TEST(PrioritizeMemoTest, MetricsCountTheNodesComputedAndTheNodesAnsweredFromTheMemo) {
  ChangingCluster cluster(12, 5);
  const auto snapshot = cluster.Publish();
  std::vector<std::string> nodes;
  for (NodeIndex i = 0; i < snapshot->node_count(); ++i) nodes.push_back(snapshot->node(i).name);
  MetricsRegistry metrics;
  const std::shared_ptr<const Profile> profile = LoadExample("default-policy.yaml");
  const testing::FunctionHandle handle = Reading(snapshot, profile);
  const ExtenderService service(handle, metrics);
  ASSERT_TRUE(service.Prioritize(PrioritizeBody(nodes)).ok());
  ASSERT_TRUE(service.Prioritize(PrioritizeBody(nodes)).ok());
  const std::string text = metrics.Render();
  EXPECT_THAT(text, ::testing::HasSubstr(absl::StrCat("tessera_prioritize_nodes_total{answer=\"computed\"} ",
                                                      nodes.size())));
  EXPECT_THAT(text, ::testing::HasSubstr(absl::StrCat("tessera_prioritize_nodes_total{answer=\"memo\"} ",
                                                      nodes.size())));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("tessera_prioritize_memo_bypassed_total 1")));
}

TEST(PrioritizeMemoTest, PrioritizeFollowsBindsBetweenRequests) {
  ChangingCluster cluster(16, 11);
  std::shared_ptr<const ClusterSnapshot> snapshot = cluster.Publish();
  MetricsRegistry metrics;
  const std::shared_ptr<const Profile> profile = LoadExample("default-policy.yaml");
  const testing::FunctionHandle handle = Reading(snapshot, profile);
  const ExtenderService service(handle, metrics);
  for (int round = 0; round < 40; ++round) {
    cluster.Change();
    snapshot = cluster.Publish();
    std::vector<std::string> nodes;
    for (NodeIndex i = 0; i < snapshot->node_count(); ++i) nodes.push_back(snapshot->node(i).name);
    nodes.push_back("node-not-in-the-model");
    const ExtenderService fresh(handle, metrics);  // a new service, so a new memo
    const std::string body = PrioritizeBody(nodes);
    ASSERT_EQ(*service.Prioritize(body), *fresh.Prioritize(body)) << "round " << round;
  }
}

TEST(PrioritizeMemoTest, AServiceWithAScorePoolAnswersAsOneWithout) {
  ChangingCluster cluster(600, 17);
  const auto snapshot = cluster.Publish();
  std::vector<std::string> nodes;
  for (NodeIndex i = 0; i < snapshot->node_count(); ++i) nodes.push_back(snapshot->node(i).name);
  const std::string body = PrioritizeBody(nodes);
  const std::shared_ptr<const Profile> profile = LoadExample("default-policy.yaml");
  WorkerPool pool(2);
  MetricsRegistry serial_metrics, pooled_metrics;
  const testing::FunctionHandle serial_handle = Reading(snapshot, profile);
  testing::FunctionHandle pooled_handle = Reading(snapshot, profile);
  pooled_handle.pool = &pool;
  const ExtenderService serial(serial_handle, serial_metrics);
  const ExtenderService pooled(pooled_handle, pooled_metrics);
  const absl::StatusOr<std::string> expected = serial.Prioritize(body);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(*pooled.Prioritize(body), *expected);  // cold: on the pool
  EXPECT_EQ(*pooled.Prioritize(body), *expected);  // warm: from the memo
  EXPECT_THAT(pooled_metrics.Render(), ::testing::HasSubstr(absl::StrCat(
                                           "tessera_prioritize_nodes_total{answer=\"computed\"} ", nodes.size())));
}

}  // namespace
}  // namespace tessera
