// What tenants and preemption cost on the request path and beside it, at
// production sizes (100, 1000, 5000 nodes × 8 GPUs, every GPU held by four
// quarter-GPU pods of 20 namespaces, 10 tenants):
//  - TenantLedger: built once per filter and bind when the policy has tenants;
//  - ChooseVictims on one node: once per node kube-scheduler proposes to the
//    preempt verb;
//  - a whole pass of Tessera's own preemption for one pod: ChooseVictims on
//    every node (extender/service/preemption_loop.h), off the request path.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/tenancy/tenant_ledger.h"
#include "scheduler/tenancy/victim_choice.h"

namespace tessera {
namespace {

constexpr int kGpusPerNode = 8;
constexpr int kPodsPerGpu = 4;
constexpr int kNamespaces = 20;
constexpr int kTenants = 10;

struct Cluster {
  ClusterModel model;
  std::shared_ptr<const ClusterSnapshot> snapshot;
  TenantSet tenants;
  std::shared_ptr<const Profile> profile;
};

// Every GPU full of quarter pods (so a half-GPU pod must preempt), two
// namespaces a tenant, priorities 0..99 spread over the pods.
std::unique_ptr<Cluster> Full(int nodes) {
  auto c = std::make_unique<Cluster>();
  NodeInventory inventory;
  inventory.source = InventorySource::kAnnotation;
  for (int g = 0; g < kGpusPerNode; ++g) {
    inventory.gpus.push_back(GpuDevice{.index = g, .uuid = absl::StrCat("GPU-", g), .model = "NVIDIA-A100-SXM4-80GB",
                                       .memory = MemoryMiB(81920), .numa = 0});
  }
  int pod = 0;
  for (int n = 0; n < nodes; ++n) {
    const std::string node = absl::StrCat("node-", n);
    c->model.UpsertNode(node, inventory, absl::OkStatus());
    for (int g = 0; g < kGpusPerNode; ++g) {
      for (int k = 0; k < kPodsPerGpu; ++k, ++pod) {
        PodHolding p;
        p.uid = absl::StrCat("uid-", pod);
        p.pod_key = absl::StrCat("ns-", pod % kNamespaces, "/pod-", pod);
        p.priority = pod % 100;
        p.bound_at = absl::FromUnixSeconds(1'800'000'000 - pod);
        p.assignment.node = node;
        GpuShare s;
        s.index = g;
        s.guaranteed = s.limit = MilliGpu(250);
        p.assignment.gpus.push_back(s);
        c->model.UpsertPod(std::move(p));
      }
    }
  }
  c->snapshot = c->model.Publish();
  std::vector<TenantSpec> specs;
  for (int t = 0; t < kTenants; ++t) {
    TenantSpec spec;
    spec.name = absl::StrCat("tenant-", t);
    spec.namespaces = {absl::StrCat("ns-", 2 * t), absl::StrCat("ns-", 2 * t + 1)};
    spec.guaranteed = GpuQuota{MilliGpu(int64_t{nodes} * 400), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
    specs.push_back(std::move(spec));
  }
  c->tenants = *TenantSet::Create(std::move(specs));
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<PluginArgs> args = PluginArgs::FromText("");
  std::vector<WeightedPlugin> plugins;
  plugins.push_back(WeightedPlugin{*(*registry.Find("gpu-share"))(*args), 1});
  c->profile = *Profile::Create(std::move(plugins));
  return c;
}

Cluster& Shared(int nodes) {
  static std::map<int, std::unique_ptr<Cluster>> clusters;
  std::unique_ptr<Cluster>& c = clusters[nodes];
  if (c == nullptr) c = Full(nodes);
  return *c;
}

PodGpuRequest Half() {
  PodGpuRequest r;
  r.whole_gpu = false;
  r.guaranteed = r.limit = MilliGpu(500);
  return r;
}

void BM_TenantLedger(benchmark::State& state) {
  Cluster& c = Shared(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    TenantLedger ledger(c.tenants, *c.snapshot);
    benchmark::DoNotOptimize(ledger.Admit(0, GpuTotals{MilliGpu(500), MemoryMiB(0), 1}));
  }
}

void BM_ChooseVictimsOnOneNode(benchmark::State& state) {
  Cluster& c = Shared(static_cast<int>(state.range(0)));
  const TenantLedger ledger(c.tenants, *c.snapshot);
  const CycleState cycle(Half());
  const Preemptor preemptor{.priority = 1000, .tenant = 0, .ask = TotalsOfRequest(cycle)};
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        ChooseVictims(*c.profile, cycle, preemptor, c.snapshot->node(0), c.snapshot->View(0), ledger, now));
  }
}

void BM_PreemptionPassOverEveryNode(benchmark::State& state) {
  Cluster& c = Shared(static_cast<int>(state.range(0)));
  const CycleState cycle(Half());
  const Preemptor preemptor{.priority = 1000, .tenant = 0, .ask = TotalsOfRequest(cycle)};
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (auto _ : state) {
    const TenantLedger ledger(c.tenants, *c.snapshot);
    std::optional<VictimCost> best;
    for (NodeIndex i = 0; i < c.snapshot->node_count(); ++i) {
      std::optional<VictimSet> v = ChooseVictims(*c.profile, cycle, preemptor, c.snapshot->node(i),
                                                 c.snapshot->View(i), ledger, now);
      if (v.has_value() && (!best.has_value() || v->cost < *best)) best = v->cost;
    }
    benchmark::DoNotOptimize(best);
  }
}

BENCHMARK(BM_TenantLedger)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ChooseVictimsOnOneNode)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PreemptionPassOverEveryNode)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
