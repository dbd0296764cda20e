// NVLink-topology-aware placement at production sizes.
//
//   ./build-bench/benchmarks/topology_benchmark --benchmark_min_time=0.2
//
//   BM_BestSet/<topology>/<k>   FindBestGpuSet per call, cycling through the idle node
//                               and 63 random free/used states (a third of the GPUs
//                               taken, the rest in a random preference order). Counter
//                               worst_us: the slowest single state (best of 5 runs each).
//   BM_SingleGpu/<topology>     LeastDamagingGpu per call: every free GPU a contender,
//                               random free/used states (the most searching it does).
//   BM_ParseTopology/<topology> k8s::ParseGpuTopology of the nvidia-smi text, with the
//                               per-topology precomputation: the cost of a node update.
//   BM_Prioritize*/<nodes>/<pod>/<plugin>
//                               ExtenderService::Prioritize on the whole request body,
//                               plugin 0: gpu-share alone (the extender benchmark's
//                               policy), 1: gpu-share + nvlink-topology. Nodes: 4/8
//                               DGX A100 (NVSwitch), 3/8 DGX-1 V100 (cube-mesh), 1/8
//                               8-T4 PCIe boxes (GFD labels), all annotated with their
//                               `nvidia-smi topo -m` text; about half the GPUs hold pods
//                               (the extender benchmark's load). Pods: 0 = 1 x 0.25 GPU,
//                               1 = 2 x 0.25, 2 = 4 whole GPUs, 3 = 1 whole GPU (the
//                               fractional ones burst to 0.5 and reserve 10Gi).
//     ...Names                 NodeNames (nodeCacheCapable=true).
//     ...FullNodes             Nodes.items: the real v1.26 Node objects of
//                              data/kube-scheduler-v1.26 with the inventory and topology
//                              annotations added (5-8 KB each). reuse=1: the snapshot
//                              knows the nodes, so their parsed topologies are shared;
//                              reuse=0: it does not, and each request parses them.
//
// Targets: best set <= 20 us per call on 8 GPUs, <= 200 us on 16; prioritize with
// the plugin within 1.5x of the extender's targets (names-only at 5000 nodes
// <= 3 ms; a full NodeList of 1000 nodes <= 37.5 ms).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/policy_loader.h"
#include "k8s/gpu_topology.h"
#include "k8s/node_inventory.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/model/gpu_set_search.h"
#include "extender/service/extender_service.h"
#include "test/testing/topologies.h"
#include "test/testing/function_handle.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

// --- the search -----------------------------------------------------------------

const std::vector<testing::ReferenceTopology>& References() {
  static const auto* refs = new std::vector<testing::ReferenceTopology>(testing::ReferenceTopologies());
  return *refs;
}

std::shared_ptr<const GpuTopology> Reference(int64_t i) {
  static std::map<int64_t, std::shared_ptr<const GpuTopology>> cache;
  std::shared_ptr<const GpuTopology>& t = cache[i];
  if (t == nullptr) t = *k8s::ParseGpuTopology(References()[static_cast<size_t>(i)].text, LinkBandwidths{});
  return t;
}

// The idle node, then random states: a third of the GPUs taken, the rest in
// a random order of preference, at least `k` of them.
std::vector<std::vector<int32_t>> States(const GpuTopology& t, int32_t k) {
  std::mt19937 rng(static_cast<uint32_t>(t.gpu_count() * 131 + k));
  std::vector<std::vector<int32_t>> states;
  std::vector<int32_t> all(static_cast<size_t>(t.gpu_count()));
  std::iota(all.begin(), all.end(), 0);
  states.push_back(all);
  while (states.size() < 64) {
    std::vector<int32_t> free;
    for (int32_t g : all) {
      if (rng() % 3 != 0) free.push_back(g);
    }
    if (static_cast<int32_t>(free.size()) < k) continue;
    std::shuffle(free.begin(), free.end(), rng);
    states.push_back(std::move(free));
  }
  return states;
}

void BM_BestSet(benchmark::State& state) {
  const std::shared_ptr<const GpuTopology> t = Reference(state.range(0));
  const auto k = static_cast<int32_t>(state.range(1));
  const std::vector<std::vector<int32_t>> states = States(*t, k);
  size_t i = 0;
  for (auto _ : state) {
    std::optional<GpuSetChoice> best = FindBestGpuSet(*t, states[i], k);
    benchmark::DoNotOptimize(best);
    if (++i == states.size()) i = 0;
  }
  double worst_us = 0;
  for (const std::vector<int32_t>& s : states) {
    double fastest = 1e9;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      std::optional<GpuSetChoice> best = FindBestGpuSet(*t, s, k);
      benchmark::DoNotOptimize(best);
      fastest = std::min(fastest, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    worst_us = std::max(worst_us, fastest);
  }
  state.counters["worst_us"] = worst_us;
  state.SetLabel(std::string(References()[static_cast<size_t>(state.range(0))].name));
}

void BM_SingleGpu(benchmark::State& state) {
  const std::shared_ptr<const GpuTopology> t = Reference(state.range(0));
  std::vector<std::pair<GpuMask, std::vector<int32_t>>> states;
  for (std::vector<int32_t>& free : States(*t, 2)) {
    GpuMask mask = 0;
    for (int32_t g : free) mask |= GpuMask{1} << g;
    states.emplace_back(mask, std::move(free));
  }
  size_t i = 0;
  for (auto _ : state) {
    int32_t gpu = LeastDamagingGpu(*t, states[i].first, states[i].second);
    benchmark::DoNotOptimize(gpu);
    if (++i == states.size()) i = 0;
  }
  state.SetLabel(std::string(References()[static_cast<size_t>(state.range(0))].name));
}

void BM_ParseTopology(benchmark::State& state) {
  const std::string& text = References()[static_cast<size_t>(state.range(0))].text;
  for (auto _ : state) {
    auto t = k8s::ParseGpuTopology(text, LinkBandwidths{});
    benchmark::DoNotOptimize(t);
  }
  state.SetLabel(std::string(References()[static_cast<size_t>(state.range(0))].name));
}

// Reference indices (test/testing/topologies.h): 0 DGX-1, 1 DGX A100, 3 PCIe x8,
// 6 DGX-2, 7 PCIe x16, 8 twin cube-mesh.
void EightGpuSets(benchmark::internal::Benchmark* b) {
  b->ArgNames({"topology", "k"});
  for (int64_t t : {0, 1, 3}) {
    for (int64_t k : {2, 3, 4, 6}) b->Args({t, k});
  }
}
void SixteenGpuSets(benchmark::internal::Benchmark* b) {
  b->ArgNames({"topology", "k"});
  for (int64_t t : {6, 7, 8}) {
    for (int64_t k : {2, 4, 8, 12}) b->Args({t, k});
  }
}

BENCHMARK(BM_BestSet)->Apply(EightGpuSets)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_BestSet)->Apply(SixteenGpuSets)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SingleGpu)->ArgName("topology")->Arg(0)->Arg(3)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseTopology)->ArgName("topology")->DenseRange(0, 8)->Unit(benchmark::kMicrosecond);

// --- the cluster ----------------------------------------------------------------

constexpr int64_t kGiB = 1024;

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t Hash(uint64_t a, uint64_t b, uint64_t c = 0) { return Mix(Mix(Mix(a) ^ b) ^ c); }

enum class Box { kDgxA100, kDgx1, kPcieT4 };

Box BoxOf(int64_t node) {
  if (node % 8 == 7) return Box::kPcieT4;
  return node % 8 < 4 ? Box::kDgxA100 : Box::kDgx1;
}

std::string NodeName(int64_t node) {
  static constexpr const char* kPrefix[] = {"dgx-a100", "dgx1-v100", "pcie-t4"};
  return absl::StrFormat("%s-%05d", kPrefix[static_cast<int>(BoxOf(node))], node);
}

const std::string& TopologyText(Box box) {
  static const std::string a100(testing::kDgxA100), dgx1(testing::kDgx1V100), pcie(testing::kPcie8TwoSockets);
  return box == Box::kDgxA100 ? a100 : box == Box::kDgx1 ? dgx1 : pcie;
}

int64_t CardMiB(Box box) { return box == Box::kDgxA100 ? 80 * kGiB : box == Box::kDgx1 ? 32 * kGiB : 15 * kGiB; }

std::string InventoryAnnotation(int64_t node) {
  const Box box = BoxOf(node);
  Json list = Json::array();
  for (int64_t g = 0; g < 8; ++g) {
    list.push_back(Json{{"index", g},
                        {"uuid", absl::StrFormat("GPU-%016x", Hash(static_cast<uint64_t>(node), static_cast<uint64_t>(g)))},
                        {"model", box == Box::kDgxA100 ? "NVIDIA-A100-SXM4-80GB" : "Tesla-V100-SXM2-32GB"},
                        {"memoryMiB", CardMiB(box)},
                        {"numa", g < 4 ? 0 : 1}});
  }
  return list.dump();
}

// What pods hold on one GPU: the extender benchmark's load (about 15% of the
// nodes saturated, 5% with one GPU left, else each GPU shared with p ~45%).
struct Share {
  int64_t milli, limit, memory_mib;
};

std::vector<Share> SharesOn(int64_t node, int64_t gpu) {
  const int64_t card = CardMiB(BoxOf(node));
  const uint64_t load = Hash(static_cast<uint64_t>(node), 0xfull) % 100;
  std::vector<Share> out;
  if (load < 15 || (load < 20 && gpu != node % 8)) {
    if (gpu % 2 == 0) {
      for (int k = 0; k < 4; ++k) out.push_back({250, 500, card / 10});
    } else {
      out.push_back({300, 600, card * 45 / 100});
      out.push_back({300, 600, card * 45 / 100});
    }
    return out;
  }
  if (load < 20) return out;
  const uint64_t h = Hash(static_cast<uint64_t>(node), static_cast<uint64_t>(gpu), 7);
  if (h % 100 >= 45) return out;
  const int pods = 1 + static_cast<int>((h >> 8) % 3);
  int64_t milli_sum = 0, memory_sum = 0;
  static constexpr int64_t kMilli[] = {100, 250, 250, 500};
  for (int k = 0; k < pods; ++k) {
    const uint64_t r = Hash(h, static_cast<uint64_t>(k));
    const int64_t milli = kMilli[r % 4];
    const int64_t memory = card / (4 + static_cast<int64_t>((r >> 8) % 4) * 4);
    if (milli_sum + milli > 1000 || memory_sum + memory > card - 256) break;
    milli_sum += milli;
    memory_sum += memory;
    out.push_back({milli, std::min<int64_t>(1000, milli * 2), memory});
  }
  return out;
}

struct PodKind {
  const char* name;
  int count;
  bool whole;
};
constexpr PodKind kPods[] = {{"1x0.25", 1, false}, {"2x0.25", 2, false}, {"4xwhole", 4, true}, {"1xwhole", 1, true}};

std::string PodJson(const PodKind& kind) {
  Json annotations = Json::object();
  annotations["tessera.io/gpu-count"] = std::to_string(kind.count);
  if (!kind.whole) {
    annotations["tessera.io/gpu-fraction"] = "0.25";
    annotations["tessera.io/gpu-fraction-limit"] = "0.5";
    annotations["tessera.io/gpu-memory"] = "10Gi";
  }
  return Json{{"metadata",
               {{"name", "trainer-0"}, {"namespace", "ml"}, {"uid", "7d1e4b2a-2222-4c3d-8e9f-000000000006"},
                {"annotations", annotations}}},
              {"spec", {{"schedulerName", "tessera-scheduler"}}}}
      .dump();
}

constexpr std::string_view kGpuShareOnly = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack, gpuStrategy: binpack, gpuMemoryReserve: 256Mi, maxLimitPercent: 200}
)";
constexpr std::string_view kWithTopology = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack, gpuStrategy: binpack, gpuMemoryReserve: 256Mi, maxLimitPercent: 200}
  - name: nvlink-topology
    weight: 3
)";

constexpr const char* kRecordedRequest = TESSERA_DATA_DIR "/kube-scheduler-v1.26/filter-request-fullnodes.json";

// A real v1.26 Node object kube-scheduler sent (kind cluster), to dress up.
Json RecordedNode() {
  std::ifstream in(kRecordedRequest);
  std::stringstream text;
  text << in.rdbuf();
  Json request = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.contains("Nodes")) return Json::object();
  return request["Nodes"]["items"][0];
}

Json NodeObject(const Json& recorded, int64_t node) {
  Json n = recorded;
  const std::string name = NodeName(node);
  Json& meta = n["metadata"];
  meta["name"] = name;
  meta["labels"]["kubernetes.io/hostname"] = name;
  Json& annotations = meta["annotations"];
  annotations.erase("example.com/gpu-topology");
  if (BoxOf(node) == Box::kPcieT4) {
    meta["labels"]["nvidia.com/gpu.count"] = "8";
    meta["labels"]["nvidia.com/gpu.product"] = "Tesla-T4";
    meta["labels"]["nvidia.com/gpu.memory"] = "15360";
  } else {
    annotations["tessera.io/gpu-inventory"] = InventoryAnnotation(node);
  }
  annotations["tessera.io/gpu-topology"] = TopologyText(BoxOf(node));
  return n;
}

struct Cluster {
  ClusterModel model;        // topologies known (reuse=1)
  ClusterModel cold_model;   // the same nodes without topologies (reuse=0)
  MetricsRegistry metrics;
  std::shared_ptr<const ClusterSnapshot> snapshot, cold_snapshot;
  std::shared_ptr<const Profile> profiles[2];
  testing::FunctionHandle handles[2][2];             // [plugin][reuse]: what each service reads
  std::unique_ptr<ExtenderService> services[2][2];  // [plugin][reuse]
  std::string names_body[4];                        // by pod kind
  std::string full_body[4];
  std::string error;
};

std::unique_ptr<Cluster> BuildCluster(int64_t n, bool full_bodies) {
  auto c = std::make_unique<Cluster>();
  const PluginRegistry registry = NewBuiltinRegistry();
  for (int on = 0; on < 2; ++on) {
    absl::StatusOr<std::shared_ptr<const Profile>> p =
        LoadPolicyText(on == 1 ? kWithTopology : kGpuShareOnly, "policy.yaml", registry);
    if (!p.ok()) {
      c->error = std::string(p.status().message());
      return c;
    }
    c->profiles[on] = *p;
  }
  const Json recorded = full_bodies ? RecordedNode() : Json::object();
  if (full_bodies && recorded.empty()) {
    c->error = std::string(kRecordedRequest) + ": cannot read a Node from it";
    return c;
  }
  std::string names, items;
  for (int64_t i = 0; i < n; ++i) {
    const std::string name = NodeName(i);
    const Box box = BoxOf(i);
    const std::string inventory = box == Box::kPcieT4 ? "" : InventoryAnnotation(i);
    k8s::NodeInventoryFields fields;
    if (box == Box::kPcieT4) {
      fields.gfd_count = "8";
      fields.gfd_product = "Tesla-T4";
      fields.gfd_memory = "15360";
    } else {
      fields.inventory_annotation = inventory;
    }
    absl::StatusOr<NodeInventory> cold = k8s::ParseNodeInventory(fields);
    fields.topology_annotation = TopologyText(box);
    absl::StatusOr<NodeInventory> inv = k8s::ParseNodeInventory(fields);
    if (!inv.ok() || !cold.ok() || inv->topology == nullptr) {
      c->error = absl::StrCat("node ", name, ": ", inv.status().ToString(), " ", inv->topology_error.ToString());
      return c;
    }
    for (int64_t g = 0; g < 8; ++g) {
      const std::vector<Share> shares = SharesOn(i, g);
      for (size_t k = 0; k < shares.size(); ++k) {
        PodHolding pod;
        pod.uid = absl::StrFormat("pod-%05d-%d-%d", i, g, k);
        pod.pod_key = "ml/" + pod.uid;
        pod.assignment.node = name;
        GpuShare s;
        s.index = static_cast<int32_t>(g);
        s.guaranteed = MilliGpu(shares[k].milli);
        s.limit = MilliGpu(shares[k].limit);
        s.memory = s.memory_limit = MemoryMiB(shares[k].memory_mib);
        pod.assignment.gpus.push_back(s);
        c->model.UpsertPod(pod);
        c->cold_model.UpsertPod(std::move(pod));
      }
    }
    c->model.UpsertNode(name, *std::move(inv), absl::OkStatus());
    c->cold_model.UpsertNode(name, *std::move(cold), absl::OkStatus());
    absl::StrAppend(&names, i > 0 ? "," : "", Json(name).dump());
    if (full_bodies) absl::StrAppend(&items, i > 0 ? "," : "", NodeObject(recorded, i).dump());
  }
  c->snapshot = c->model.Publish();
  c->cold_snapshot = c->cold_model.Publish();
  for (int on = 0; on < 2; ++on) {
    for (int reuse = 0; reuse < 2; ++reuse) {
      Cluster* cp = c.get();
      c->handles[on][reuse].snapshot = [cp, reuse] { return reuse == 1 ? cp->snapshot : cp->cold_snapshot; };
      c->handles[on][reuse].profile = [cp, on] { return cp->profiles[on]; };
      c->services[on][reuse] = std::make_unique<ExtenderService>(c->handles[on][reuse], c->metrics);
    }
  }
  for (size_t k = 0; k < std::size(kPods); ++k) {
    const std::string pod = PodJson(kPods[k]);
    c->names_body[k] = absl::StrFormat(R"({"Pod":%s,"Nodes":null,"NodeNames":[%s]})", pod, names);
    if (full_bodies) {
      c->full_body[k] = absl::StrFormat(R"({"Pod":%s,"Nodes":{"metadata":{},"items":[%s]},"NodeNames":null})", pod, items);
    }
  }
  if (full_bodies) {
    std::fprintf(stderr, "cluster: %lld nodes, full body %zu B (%zu B per node)\n", static_cast<long long>(n),
                 c->full_body[0].size(), items.size() / static_cast<size_t>(n));
  }
  return c;
}

// Names-only bodies for every size; full NodeLists only up to 1000 nodes (the
// extender's full-NodeList target is at 1000).
const Cluster& GetCluster(int64_t n) {
  static std::map<int64_t, std::unique_ptr<Cluster>> cache;
  std::unique_ptr<Cluster>& c = cache[n];
  if (c == nullptr) c = BuildCluster(n, n <= 1000);
  return *c;
}

void Prioritize(benchmark::State& state, bool full) {
  const Cluster& c = GetCluster(state.range(0));
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const int64_t pod = state.range(1), on = state.range(2), reuse = full ? state.range(3) : 1;
  const std::string& body = full ? c.full_body[pod] : c.names_body[pod];
  if (body.empty()) {
    state.SkipWithError("no body of this form at this size");
    return;
  }
  const ExtenderService& service = *c.services[on][reuse];
  absl::StatusOr<std::string> first = service.Prioritize(body);  // checks it, sizes the parser
  if (!first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> out = service.Prioritize(body);
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(absl::StrCat(kPods[pod].name, on == 1 ? " +nvlink-topology" : " gpu-share only"));
}

void BM_PrioritizeNames(benchmark::State& state) { Prioritize(state, false); }
void BM_PrioritizeFullNodes(benchmark::State& state) { Prioritize(state, true); }

void NamesArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "pod", "plugin"});
  for (int64_t nodes : {1000, 5000}) {
    for (int64_t pod = 0; pod < 4; ++pod) {
      for (int64_t on : {0, 1}) b->Args({nodes, pod, on});
    }
  }
}
void FullArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "pod", "plugin", "reuse"});
  for (int64_t pod = 0; pod < 4; ++pod) {
    b->Args({1000, pod, 0, 1});
    b->Args({1000, pod, 1, 1});
    b->Args({1000, pod, 1, 0});
  }
}

BENCHMARK(BM_PrioritizeNames)->Apply(NamesArgs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeFullNodes)->Apply(FullArgs)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
