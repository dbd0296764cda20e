// The tenant replay: quotas, priorities and GPU-aware preemption on an event
// clock, on clusters of one or two nodes whose every number can be worked
// out by hand; and its report.
#include "sim/tenant_replay.h"

#include <string>
#include <vector>

#include "config/policy_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "sim/experiment.h"
#include "sim/tenant_report.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::shared_ptr<const Profile> FitOnly() {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: host-resources\n  - name: gpu-fit\n",
      "policy.yaml", registry);
  EXPECT_TRUE(profile.ok()) << profile.status();
  return profile.ok() ? *profile : nullptr;
}

TraceNode GpuNode(std::string name, int32_t gpus) { return TraceNode{std::move(name), 64000, 262144, gpus, "G2"}; }

// A pod of `tenant` at `priority`, asking `gpus` × `milli`, in the trace from `created` to `deleted`.
struct PodSpec {
  std::string name;
  std::string tenant;  // empty: none
  int32_t priority = 0;
  int32_t gpus = 1;
  int64_t milli = 1000;
  int64_t created = 0;
  int64_t deleted = 0;
};

TenantSpec Tenant(std::string name, int64_t guaranteed_milli, int64_t max_milli = GpuQuota::kUnlimited) {
  TenantSpec t;
  t.name = std::move(name);
  t.guaranteed = GpuQuota{MilliGpu(guaranteed_milli), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
  t.max = GpuQuota{MilliGpu(max_milli), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
  return t;
}

// One run of `pods` on `nodes` (node ranks in list order).
struct ScenarioRun {
  TenantSet tenants;
  TenantReplayResult result;
  const TenantStats& of(const std::string& tenant) const { return result.tenants[*tenants.Find(tenant)]; }
};

ScenarioRun RunScenario(const std::vector<TraceNode>& nodes, const std::vector<TenantSpec>& specs,
                const std::vector<PodSpec>& pods) {
  ScenarioRun run;
  absl::StatusOr<TenantSet> tenants = TenantSet::Create(specs);
  EXPECT_TRUE(tenants.ok()) << tenants.status();
  run.tenants = *std::move(tenants);
  std::vector<TracePod> trace;
  std::vector<PodTenancy> tenancy;
  for (const PodSpec& s : pods) {
    TracePod p;
    p.name = s.name;
    p.cpu_milli = 1000;
    p.memory_mib = 1024;
    p.gpus = s.gpus;
    p.gpu_milli = s.gpus == 0 ? 0 : s.milli;
    p.creation_time = s.created;
    p.deletion_time = s.deleted;
    trace.push_back(std::move(p));
    tenancy.push_back(PodTenancy{.tenant = s.tenant.empty() ? std::nullopt : run.tenants.Find(s.tenant),
                                 .priority = s.priority});
  }
  const std::shared_ptr<const Profile> profile = FitOnly();
  const Cluster cluster(nodes);
  const PodClasses classes = ClassifyPods(trace);
  std::vector<uint32_t> rank(nodes.size());
  for (uint32_t i = 0; i < rank.size(); ++i) rank[i] = i;
  run.result = TenantReplay(TenantReplayInput{.profile = profile.get(), .empty_cluster = &cluster, .pods = &trace,
                                              .classes = &classes, .tenants = &run.tenants, .tenancy = &tenancy,
                                              .node_rank = &rank, .arrival_speedup = 1, .seed = 1,
                                              .memo = MemoMode::kAuto});
  return run;
}

struct TenantExpect {
  std::string tenant;
  int64_t placed, refused_over_max, never_placed, evicted, preemptions, victims;
  std::vector<int64_t> waits;
};

struct Case {
  std::string name;
  std::vector<TraceNode> nodes;
  std::vector<TenantSpec> tenants;
  std::vector<PodSpec> pods;
  std::vector<TenantExpect> expect;
};

TEST(TenantReplayTest, QuotasPrioritiesAndPreemptionDecideWhoRunsAndWhen) {
  const std::vector<Case> cases = {
      {"a higher-priority pod of a tenant within its guarantee evicts a borrower's pod; the victim waits for the GPU",
       {GpuNode("n", 1)},
       {Tenant("prod", 1000), Tenant("batch", 0)},
       {{"b1", "batch", 0, 1, 1000, 0, 100}, {"p1", "prod", 2000, 1, 1000, 10, 30}},
       // p1 at 10 evicts b1; p1 leaves at 30 and b1 runs again from 30 (it waited 20 s).
       {{"prod", 1, 0, 0, 0, 1, 1, {0}}, {"batch", 1, 0, 0, 1, 0, 0, {0, 20}}}},
      {"a borrowing pod never evicts a tenant within its guarantee, whatever its priority",
       {GpuNode("n", 1)},
       {Tenant("prod", 0), Tenant("team", 1000)},
       {{"t1", "team", 0, 1, 1000, 0, 100}, {"p1", "prod", 2000, 1, 1000, 10, 30}},
       // p1 would borrow (prod has no guarantee) and team holds no more than its own: p1 waits until 100.
       {{"prod", 1, 0, 0, 0, 0, 0, {90}}, {"team", 1, 0, 0, 0, 0, 0, {0}}}},
      {"pods of equal priority wait their turn",
       {GpuNode("n", 1)},
       {Tenant("prod", 1000), Tenant("batch", 0)},
       {{"b1", "batch", 2000, 1, 1000, 0, 100}, {"p1", "prod", 2000, 1, 1000, 10, 30}},
       {{"prod", 1, 0, 0, 0, 0, 0, {90}}, {"batch", 1, 0, 0, 0, 0, 0, {0}}}},
      {"the queue serves the highest priority first, whoever came first",
       {GpuNode("n", 1)},
       {Tenant("prod", 1000), Tenant("batch", 0)},
       // x1 holds the GPU until 100; b1 waits from 5, p1 from 10. p1 goes first (100..120), then b1.
       {{"x1", "", 3000, 1, 1000, 0, 100}, {"b1", "batch", 0, 1, 1000, 5, 1005}, {"p1", "prod", 2000, 1, 1000, 10, 30}},
       {{"prod", 1, 0, 0, 0, 0, 0, {90}}, {"batch", 1, 0, 0, 0, 0, 0, {115}}}},
      {"a pod that would take its tenant over its max is refused though GPUs are idle",
       {GpuNode("n", 2)},
       {Tenant("capped", 0, 1000)},
       {{"c1", "capped", 0, 1, 1000, 0, 100}, {"c2", "capped", 0, 1, 1000, 5, 50}, {"c3", "capped", 0, 1, 500, 200, 210}},
       // c2 would hold 2000 > 1000: refused. c3 comes after c1 left: placed.
       {{"capped", 2, 1, 0, 0, 0, 0, {0, 0}}}},
      {"preemption frees the GPU the pod fits on, not milli-GPU scattered over the node",
       {GpuNode("n", 2)},
       {Tenant("prod", 2000), Tenant("batch", 0)},
       // GPU 0: a prod half and a batch half; GPU 1: two batch pods, 0.5 and 0.3. A whole-GPU
       // prod pod must take GPU 1: both its pods go, while GPU 0's batch half stays.
       {{"p0", "prod", 2000, 1, 500, 0, 1000},
        {"b0", "batch", 0, 1, 500, 0, 1000},
        {"b1", "batch", 0, 1, 500, 1, 1000},
        {"b2", "batch", 0, 1, 300, 2, 1000},
        {"p1", "prod", 2000, 1, 1000, 10, 20}},
       {{"prod", 2, 0, 0, 0, 1, 2, {0, 0}}, {"batch", 3, 0, 0, 2, 0, 0, {0, 0, 0, 10, 10}}}},
      {"a pod that never finds room is counted as never placed",
       {GpuNode("n", 1)},
       {Tenant("prod", 1000)},
       {{"p1", "prod", 0, 1, 1000, 0, 100}, {"p2", "prod", 0, 2, 1000, 5, 50}},
       {{"prod", 1, 0, 1, 0, 0, 0, {0}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ScenarioRun run = RunScenario(c.nodes, c.tenants, c.pods);
    EXPECT_EQ(run.result.preemption_misses, 0);
    for (const TenantExpect& e : c.expect) {
      SCOPED_TRACE(e.tenant);
      const TenantStats& s = run.of(e.tenant);
      EXPECT_EQ(s.placed, e.placed);
      EXPECT_EQ(s.refused_over_max, e.refused_over_max);
      EXPECT_EQ(s.never_placed, e.never_placed);
      EXPECT_EQ(s.evicted, e.evicted);
      EXPECT_EQ(s.preemptions, e.preemptions);
      EXPECT_EQ(s.victims, e.victims);
      EXPECT_THAT(s.waits, ElementsAreArray(e.waits));
    }
  }
}

// prod is guaranteed the one GPU but a higher-priority pod of no tenant holds
// it for 100 s: prod's pod waits 100 s, then runs 50. It held its guarantee
// for 50 of the 150 s it wanted it: 33.3%.
ScenarioRun GuaranteeHalfDenied() {
  return RunScenario({GpuNode("n", 1)}, {Tenant("prod", 1000), Tenant("batch", 0, 4000)},
                     {{"x1", "", 3000, 1, 1000, 0, 100}, {"p1", "prod", 0, 1, 1000, 0, 50}});
}

TEST(TenantReplayTest, GuaranteeMetIsTheTimeTheTenantHeldWhatItAskedForUpToItsGuarantee) {
  const ScenarioRun run = GuaranteeHalfDenied();
  const TenantStats& prod = run.of("prod");
  EXPECT_EQ(prod.guarantee_held, 1000 * 50);
  EXPECT_EQ(prod.guarantee_wanted, 1000 * 150);
  EXPECT_THAT(prod.waits, ElementsAre(100));
  EXPECT_EQ(run.result.tenants.back().placed, 1) << "the pod of no tenant has its own row";
  EXPECT_EQ(run.result.end_time, 150);
}

TEST(TenantReportTest, ATinyRunReadsAsWorkedOutByHand) {
  ScenarioRun run = GuaranteeHalfDenied();
  RunSummary s;
  s.trace = "tiny";
  s.policy = "fit";
  s.seed = 1;
  s.capacity_milli = 1000;
  s.tenants = std::make_shared<const TenantSet>(run.tenants);
  s.tenancy = run.result;
  const std::string md = TenantMarkdown({s});
  EXPECT_THAT(md, HasSubstr("### Tenants: tiny, fit (1 run, 1 GPUs)"));
  EXPECT_THAT(md, HasSubstr("| prod | 1 | – | 1 | 1 | 0 | 0 | 0 | 0 (0) | 100 / 100 | 33.3% |\n"));
  EXPECT_THAT(md, HasSubstr("| batch | 0 | 4 | 0 | 0 | 0 | 0 | 0 | 0 (0) | – | – |\n"));
  EXPECT_THAT(md, HasSubstr("| (no tenant) | – | – | 1 | 1 | 0 | 0 | 0 | 0 (0) | 0 / 0 | – |\n"));

  std::ostringstream csv;
  WriteTenantsCsv({s}, csv);
  EXPECT_THAT(csv.str(), HasSubstr("tiny,fit,1,prod,1000,,1,1,0,0,0,0,0,100.0,100,33.3\n"));
  EXPECT_THAT(csv.str(), HasSubstr("tiny,fit,1,batch,0,4000,0,0,0,0,0,0,0,,,\n"));
}

TEST(TenantReportTest, WaitStatisticsUseTheNearestRank) {
  struct Case {
    std::vector<int64_t> waits;
    double mean;
    int64_t p95;
  };
  const std::vector<Case> cases = {
      {{5}, 5, 5},
      {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100}, 5, 0},  // 19 of 20 are 0: p95 is 0
      {{100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20}, 6.3157894736842106, 100},  // ⌈0.95 × 19⌉ = 19th
  };
  for (const Case& c : cases) {
    const WaitStats w = WaitStatsOf(c.waits);
    EXPECT_DOUBLE_EQ(w.mean, c.mean);
    EXPECT_EQ(w.p95, c.p95);
  }
  EXPECT_EQ(WaitStatsOf({}).n, 0u);
}

TEST(PodTenancyTest, PrioritiesComeFromTheTracesQosClass) {
  EXPECT_EQ(PriorityOfQos("LS"), 2000);
  EXPECT_EQ(PriorityOfQos("Guaranteed"), 2000);
  EXPECT_EQ(PriorityOfQos("Burstable"), 1000);
  EXPECT_EQ(PriorityOfQos("BE"), 0);
  EXPECT_EQ(PriorityOfQos(""), 0);
}

TEST(PodTenancyTest, TenantsComeFromTheRuleChosen) {
  absl::StatusOr<TenantSet> tenants = TenantSet::Create({Tenant("LS", 0), Tenant("BE", 0), Tenant("ml", 0)});
  ASSERT_TRUE(tenants.ok());
  std::vector<TracePod> pods(3);
  pods[0].name = "a";
  pods[0].qos = "LS";
  pods[1].name = "b";
  pods[1].qos = "Burstable";
  pods[1].tenant = "ml";
  pods[2].name = "c";
  pods[2].qos = "BE";

  absl::StatusOr<std::vector<PodTenancy>> by_qos = AssignTenancy(pods, *tenants, TenantRule::kQos);
  ASSERT_TRUE(by_qos.ok());
  EXPECT_EQ((*by_qos)[0].tenant, tenants->Find("LS"));
  EXPECT_EQ((*by_qos)[1].tenant, std::nullopt) << "no tenant is named Burstable";
  EXPECT_EQ((*by_qos)[1].priority, 1000);

  absl::StatusOr<std::vector<PodTenancy>> by_column = AssignTenancy(pods, *tenants, TenantRule::kColumn);
  ASSERT_TRUE(by_column.ok());
  EXPECT_EQ((*by_column)[0].tenant, std::nullopt);
  EXPECT_EQ((*by_column)[1].tenant, tenants->Find("ml"));

  pods[2].tenant = "nobody";
  EXPECT_THAT(std::string(AssignTenancy(pods, *tenants, TenantRule::kColumn).status().message()),
              HasSubstr("pod c: tenant \"nobody\" is not a tenant"));

  // The hash: the same every time, and every tenant gets some of many pods.
  std::vector<TracePod> many(300);
  for (size_t i = 0; i < many.size(); ++i) many[i].name = "pod-" + std::to_string(i);
  absl::StatusOr<std::vector<PodTenancy>> hashed = AssignTenancy(many, *tenants, TenantRule::kHash);
  ASSERT_TRUE(hashed.ok());
  std::vector<int> per_tenant(3);
  for (const PodTenancy& t : *hashed) ++per_tenant[*t.tenant];
  for (int n : per_tenant) EXPECT_GT(n, 60);
  EXPECT_EQ((*hashed)[7].tenant, (*AssignTenancy(many, *tenants, TenantRule::kHash))[7].tenant);

  EXPECT_FALSE(ParseTenantRule("random").ok());
}

// The openb trace, sampled to a tenth of its nodes and arriving 100× faster:
// busy enough to preempt, and every pod accounted for.
TEST(TenantReplayTest, TheOpenbTraceRunsAndEveryPodIsAccountedFor) {
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {NamedPath{"default", testing::OpenbPath("openb_pod_list_default.csv")}};
  options.policies = {NamedPath{"tessera", std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"}};
  options.seeds = {42};
  options.node_sample = 10;
  options.tenancy = TenancyOptions{
      .tenants_path = std::string(TESSERA_SOURCE_DIR) + "/config/examples/placement/tenants-policy.yaml",
      .rule = TenantRule::kHash,
      .arrival_speedup = 100};
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  const TenantReplayResult& r = *(*runs)[0].tenancy;
  EXPECT_EQ((*runs)[0].capacity_milli, 626000) << "every 10th of 1213 nodes";
  int64_t submitted = 0, evicted = 0, victims = 0, preemptions = 0;
  for (const TenantStats& s : r.tenants) {
    EXPECT_EQ(s.placed + s.refused_over_max + s.never_placed, s.submitted);
    EXPECT_GE(static_cast<int64_t>(s.waits.size()), s.placed);
    EXPECT_LE(s.guarantee_held, s.guarantee_wanted);
    submitted += s.submitted;
    evicted += s.evicted;
    victims += s.victims;
    preemptions += s.preemptions;
  }
  EXPECT_EQ(submitted, 8152);
  EXPECT_EQ(evicted, victims);
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(r.preemption_misses, 0);
}

TEST(TenantReplayTest, AListWithoutTimesIsRefusedByName) {
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {NamedPath{"multigpu20", testing::OpenbPath("openb_pod_list_multigpu20.csv")}};
  options.policies = {NamedPath{"tessera", std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"}};
  options.seeds = {42};
  options.tenancy = TenancyOptions{
      .tenants_path = std::string(TESSERA_SOURCE_DIR) + "/config/examples/placement/tenants-policy.yaml",
      .rule = TenantRule::kHash,
      .arrival_speedup = 1};
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);
  EXPECT_THAT(std::string(runs.status().message()),
              HasSubstr("openb_pod_list_multigpu20.csv: the tenant replay needs the creation_time"));
}

}  // namespace
}  // namespace tessera::sim
