// Live GPU metrics at production size: 5000 nodes x 8 GPUs.
//
//   ./build/benchmarks/telemetry_benchmark --benchmark_min_time=0.2
//
//   BM_ParseAnswer/labels     one Prometheus answer of 40,000 series parsed into the
//                             sample table: labels:0 as Tessera receives it (its
//                             queries keep only Hostname, UUID, gpu; ~5 MB),
//                             labels:1 with all the DCGM exporter's labels (~16 MB)
//   BM_RefreshRound           a whole round's CPU work: the six answers parsed, joined
//                             per GPU (UUIDs mapped through the snapshot's
//                             inventories) and written into the model and published
//   BM_Prioritize/<policy>    ExtenderService::Prioritize, names-only request:
//                             gpu-share alone, then with load-aware on and every node
//                             measured (the mode that costs the most), with
//                             load-aware on but no telemetry, and with every node
//                             measured and the score memo cold (a new pod shape),
//                             on the caller alone and with the worker pool
//
// Targets (2-core machine): a refresh's parsing <= 200 ms; prioritize at 5000
// nodes with load-aware within 1.2x of the extender's (<= 2 ms, so <= 2.4 ms).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/memo/worker_pool.h"
#include "extender/service/extender_service.h"
#include "telemetry/gpu_samples.h"
#include "telemetry/prometheus_vector.h"
#include "test/testing/function_handle.h"

namespace tessera {
namespace {

constexpr int64_t kGpusPerNode = 8;

uint64_t Mix(uint64_t x) {  // splitmix64: deterministic pseudo-randomness
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string NodeName(int64_t i) { return absl::StrFormat("gpu-a100-%05d", i); }
std::string Uuid(int64_t node, int64_t gpu) {
  const uint64_t h = Mix(static_cast<uint64_t>(node) * 64 + static_cast<uint64_t>(gpu));
  return absl::StrFormat("GPU-%08x-%04x-%04x-%04x-%012x", h >> 32, (h >> 16) & 0xffff, h & 0xffff,
                         (h >> 48) & 0xffff, Mix(h) & 0xffffffffffffULL);
}

// An answer as Prometheus gives it for `max by (Hostname, UUID, gpu) (...)`
// or, with `all_labels`, for a raw DCGM_FI_DEV_* query with the exporter's
// labels (the operator's service discovery adds the pod's).
std::string Answer(int64_t nodes, int seed, bool all_labels) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  out.reserve(static_cast<size_t>(nodes * kGpusPerNode * 420));
  for (int64_t n = 0; n < nodes; ++n) {
    const std::string name = NodeName(n);
    for (int64_t g = 0; g < kGpusPerNode; ++g) {
      if (n + g > 0) out += ',';
      const uint64_t h = Mix(static_cast<uint64_t>(n * kGpusPerNode + g) ^ static_cast<uint64_t>(seed));
      const std::string value = seed == 5 ? absl::StrFormat("%.3f", 1763765000.0 + static_cast<double>(h % 15))
                                          : absl::StrCat(h % 100);
      if (!all_labels) {
        absl::StrAppend(&out, R"({"metric":{"Hostname":")", name, R"(","UUID":")", Uuid(n, g), R"(","gpu":")", g,
                        R"("},"value":[1763765012.345,")", value, "\"]}");
        continue;
      }
      absl::StrAppend(&out, R"({"metric":{"DCGM_FI_DRIVER_VERSION":"535.129.03","Hostname":")", name,
                      R"(","UUID":")", Uuid(n, g), R"(","container":"nvidia-dcgm-exporter","device":"nvidia)", g,
                      R"(","gpu":")", g, R"(","instance":"10.)", n / 256, ".", n % 256,
                      R"(.7:9400","job":"nvidia-dcgm-exporter","modelName":"NVIDIA A100-SXM4-80GB",)",
                      R"("namespace":"gpu-operator","pci_bus_id":"00000000:)", absl::StrFormat("%02X", 16 + g),
                      R"(:00.0","pod":"nvidia-dcgm-exporter-)", n, R"("},"value":[1763765012.345,")", value,
                      "\"]}");
    }
  }
  out += "]}}";
  return out;
}

// The cluster: every node 8 A100-80GB with UUIDs; about half the GPUs hold
// 1-3 pods of 100-500 milli.
struct Cluster {
  ClusterModel model;
  std::vector<std::string> names;
};

std::unique_ptr<Cluster> BuildCluster(int64_t nodes) {
  auto c = std::make_unique<Cluster>();
  for (int64_t n = 0; n < nodes; ++n) {
    const std::string name = NodeName(n);
    c->names.push_back(name);
    NodeInventory inventory;
    inventory.source = InventorySource::kAnnotation;
    for (int64_t g = 0; g < kGpusPerNode; ++g) {
      GpuDevice& d = inventory.gpus.emplace_back();
      d.index = static_cast<int32_t>(g);
      d.uuid = Uuid(n, g);
      d.model = "NVIDIA-A100-SXM4-80GB";
      d.memory = MemoryMiB(81920);
      const uint64_t h = Mix(static_cast<uint64_t>(n * 131 + g));
      if (h % 100 >= 50) continue;
      for (uint64_t k = 0; k < 1 + (h >> 8) % 3; ++k) {
        PodHolding pod;
        pod.uid = absl::StrCat("pod-", n, "-", g, "-", k);
        pod.pod_key = absl::StrCat("ml/", pod.uid);
        pod.assignment.node = name;
        GpuShare& s = pod.assignment.gpus.emplace_back();
        s.index = static_cast<int32_t>(g);
        s.guaranteed = MilliGpu(100 + 100 * static_cast<int64_t>((h >> (12 + k)) % 3));
        s.limit = s.guaranteed * 2;
        s.memory = s.memory_limit = MemoryMiB(8192);
        pod.bound_at = absl::Now() - absl::Minutes(10);
        c->model.UpsertPod(std::move(pod));
      }
    }
    c->model.UpsertNode(name, std::move(inventory), absl::OkStatus());
  }
  c->model.Publish();
  return c;
}

Cluster& GetCluster(int64_t nodes) {
  static std::map<int64_t, std::unique_ptr<Cluster>> cache;
  auto& c = cache[nodes];
  if (c == nullptr) c = BuildCluster(nodes);
  return *c;
}

const std::string& GetAnswer(int64_t nodes, int seed, bool all_labels = false) {
  static std::map<std::tuple<int64_t, int, bool>, std::string> cache;
  std::string& a = cache[{nodes, seed, all_labels}];
  if (a.empty()) a = Answer(nodes, seed, all_labels);
  return a;
}

const SeriesLabels kLabels{"Hostname", "UUID", "gpu"};

void BM_ParseAnswer(benchmark::State& state) {
  const std::string& body = GetAnswer(state.range(0), 0, state.range(1) != 0);
  simdjson::dom::parser parser;
  for (auto _ : state) {
    GpuSampleTable table;
    const absl::Status st =
        ParseInstantVector(body, kLabels, parser, [&](const VectorSample& s) { table.Add(GpuMetric::kUtilization, s); });
    if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    benchmark::DoNotOptimize(table);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
  state.counters["answer_MB"] = static_cast<double>(body.size()) / 1e6;
}

void BM_RefreshRound(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  Cluster& cluster = GetCluster(nodes);
  constexpr GpuMetric kMetrics[] = {GpuMetric::kUtilization, GpuMetric::kSustainedUtilization, GpuMetric::kSmActive,
                                    GpuMetric::kMemoryUsed,  GpuMetric::kMemoryFree,           GpuMetric::kSampleTime};
  std::vector<const std::string*> answers;
  for (int i = 0; i < 6; ++i) answers.push_back(&GetAnswer(nodes, i));
  simdjson::dom::parser parser;
  const GpuSampleTable::Options options{.stale_after = absl::Minutes(3),
                                        .has_sample_time = true,
                                        .utilization_window = "1m avg",
                                        .sustained_window = "5m avg"};
  for (auto _ : state) {
    GpuSampleTable table;
    for (int i = 0; i < 6; ++i) {
      const GpuMetric metric = kMetrics[i];
      const absl::Status st = ParseInstantVector(*answers[static_cast<size_t>(i)], kLabels, parser,
                                                 [&](const VectorSample& s) { table.Add(metric, s); });
      if (!st.ok()) state.SkipWithError(std::string(st.message()).c_str());
    }
    const auto snapshot = cluster.model.Current();
    for (auto& [name, telemetry] : table.Build(snapshot.get(), options)) {
      cluster.model.SetNodeTelemetry(std::move(name), std::make_shared<const NodeTelemetry>(std::move(telemetry)));
    }
    benchmark::DoNotOptimize(cluster.model.Publish());
  }
}

enum class Policy { kGpuShare, kLoadAware, kLoadAwareNoTelemetry, kLoadAwareColdMemo, kLoadAwareColdMemoPool };

constexpr std::string_view kGpuShare = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack, gpuStrategy: binpack, gpuMemoryReserve: 256Mi, maxLimitPercent: 200}
)";
constexpr std::string_view kLoadAware = R"(  - name: load-aware
    weight: 2
    args: {rejectBusyGpus: true}
)";

// Fresh telemetry for every GPU of the cluster, some pods bound since.
void MeasureEverything(Cluster& c) {
  const absl::Time now = absl::Now();
  for (size_t n = 0; n < c.names.size(); ++n) {
    auto t = std::make_shared<NodeTelemetry>();
    t->stale_after = absl::Hours(1);
    t->utilization_window = "1m avg";
    t->sustained_window = "5m avg";
    for (int32_t g = 0; g < kGpusPerNode; ++g) {
      const uint64_t h = Mix(n * 8 + static_cast<uint64_t>(g));
      GpuTelemetry& m = t->gpus.emplace_back();
      m.index = g;
      m.sampled_at = now - absl::Seconds(5);
      m.utilization = PerMille(static_cast<int64_t>(h % 850));
      m.sustained_utilization = PerMille(static_cast<int64_t>((h >> 10) % 850));
      m.memory_used = MemoryMiB(static_cast<int64_t>((h >> 20) % 40000));
      m.memory_free = MemoryMiB(81920 - m.memory_used.value());
    }
    c.model.SetNodeTelemetry(c.names[n], std::move(t));
  }
  c.model.Publish();
}

void BM_Prioritize(benchmark::State& state, Policy policy) {
  const int64_t nodes = state.range(0);
  Cluster& cluster = GetCluster(nodes);
  if (policy == Policy::kLoadAwareNoTelemetry) {
    for (const std::string& name : cluster.names) cluster.model.SetNodeTelemetry(name, nullptr);
    cluster.model.Publish();
  } else if (policy == Policy::kLoadAware || policy == Policy::kLoadAwareColdMemo ||
             policy == Policy::kLoadAwareColdMemoPool) {
    MeasureEverything(cluster);
  }
  const PluginRegistry registry = NewBuiltinRegistry();
  const std::string text = policy == Policy::kGpuShare ? std::string(kGpuShare) : std::string(kGpuShare) + std::string(kLoadAware);
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(text, "bench.yaml", registry);
  if (!profile.ok()) {
    state.SkipWithError(std::string(profile.status().message()).c_str());
    return;
  }
  MetricsRegistry metrics;
  const std::shared_ptr<const ClusterSnapshot> snapshot = cluster.model.Current();
  testing::FunctionHandle handle;
  handle.snapshot = [&] { return snapshot; };
  handle.profile = [&] { return *profile; };
  ExtenderService service(handle, metrics);
  std::string body =
      R"({"Pod":{"metadata":{"name":"resnet-0","namespace":"ml","uid":"7d1e4b2a-0006","annotations":{)"
      R"("tessera.io/gpu-fraction":"0.25","tessera.io/gpu-fraction-limit":"0.5","tessera.io/gpu-memory":"10Gi"}}},)"
      R"("Nodes":null,"NodeNames":[)";
  for (size_t i = 0; i < cluster.names.size(); ++i) absl::StrAppend(&body, i > 0 ? "," : "", "\"", cluster.names[i], "\"");
  body += "]}";
  absl::StatusOr<std::string> first = service.Prioritize(body);
  if (!first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    if (policy == Policy::kLoadAwareColdMemo || policy == Policy::kLoadAwareColdMemoPool) {
      // A new service has a new score memo: every node is chosen and scored
      // afresh, as for the first pod of a shape; with the pool, on as many
      // threads as tessera-extender uses by default here.
      static WorkerPool pool(WorkerPool::DefaultThreads());
      testing::FunctionHandle cold_handle = handle;
      cold_handle.pool = policy == Policy::kLoadAwareColdMemoPool ? &pool : nullptr;
      const ExtenderService cold(cold_handle, metrics);
      absl::StatusOr<std::string> out = cold.Prioritize(body);
      benchmark::DoNotOptimize(out);
      continue;
    }
    absl::StatusOr<std::string> out = service.Prioritize(body);
    benchmark::DoNotOptimize(out);
  }
}

BENCHMARK(BM_ParseAnswer)->ArgNames({"nodes", "labels"})->Args({5000, 0})->Args({5000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RefreshRound)->ArgName("nodes")->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Prioritize, gpu_share, Policy::kGpuShare)->ArgName("nodes")->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prioritize, load_aware, Policy::kLoadAware)->ArgName("nodes")->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prioritize, load_aware_no_telemetry, Policy::kLoadAwareNoTelemetry)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prioritize, load_aware_cold_memo, Policy::kLoadAwareColdMemo)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prioritize, load_aware_cold_memo_pool, Policy::kLoadAwareColdMemoPool)
    ->ArgName("nodes")
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();  // the helpers' time counts

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
