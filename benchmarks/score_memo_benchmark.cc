// Names-only prioritize with the score memo (scheduler/memo/score_memo.h)
// at 100, 1000 and 5000 nodes of 8 GPUs, about half of them shared by
// running pods. The policies are the shipped files, read by the real loader:
// the default policy (config/examples/default-policy.yaml: host-resources,
// fgd, host-stranding) and gpu-share alone (binpack-policy.yaml). The
// default policy runs twice: on nodes whose host CPU and memory are unknown
// (host-stranding then has nothing to weigh) and, `_host_known`, on nodes
// that report them as the Kubernetes watch always does (96 CPUs; each pod
// there asks 3, the pending pod 4): host-resources and host-stranding then
// weigh every node.
//
//   ./build-bench/benchmarks/score_memo_benchmark --benchmark_min_time=0.2
//
// Cases, each the whole verb on the request body (decode, policy, encode):
//   BM_PrioritizeColdMemo     a fresh memo every request: every node computed
//                             (a policy reload, or the first pod of a shape)
//   BM_PrioritizeColdMemoParallel  the same with a WorkerPool of
//                             WorkerPool::DefaultThreads() helpers (counter
//                             `helpers`), as tessera-extender runs by default
//   BM_PrioritizeNewShape     the first pod of a shape on a memo that has
//                             served others (a new slot; the memo's working
//                             space and freed tables are reused), without
//                             and with the pool
//   BM_PrioritizeAfterOneBind one pod bound or gone on one node between two
//                             requests of one shape: one node recomputed
//                             (the publish itself, the watch's work, untimed)
//   BM_PrioritizeUnchanged    nothing changed: every node from the memo
// and, for the policy stage alone over the snapshot's views:
//   BM_ProfileScore           Profile::Score, no memo (what prioritize did before)
//   BM_MemoScoreAfterOneBind  ScoreMemo::Score after one bind
//   BM_MemoScoreCold          ScoreMemo::Score on a fresh memo, without and with the pool
//
// Target (issue #6): names-only prioritize at 5000 nodes <= 2 ms.

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/memo/score_memo.h"
#include "scheduler/memo/worker_pool.h"
#include "scheduler/metrics/metrics.h"
#include "extender/service/extender_service.h"
#include "test/testing/function_handle.h"

namespace tessera {
namespace {

constexpr int kGpusPerNode = 8;

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string NodeName(int64_t i) { return absl::StrFormat("gpu-node-%05d", i); }

NodeInventory A100s() {
  NodeInventory inv;
  inv.source = InventorySource::kAnnotation;
  for (int g = 0; g < kGpusPerNode; ++g) {
    inv.gpus.push_back(GpuDevice{.index = g, .uuid = "", .model = "NVIDIA-A100-SXM4-80GB",
                                 .memory = MemoryMiB(81920), .numa = g / 4});
  }
  return inv;
}

PodHolding Share(std::string uid, std::string node, int32_t gpu, int64_t milli, int64_t mib) {
  PodHolding pod;
  pod.uid = std::move(uid);
  pod.pod_key = "ml/" + pod.uid;
  pod.assignment.node = std::move(node);
  GpuShare s;
  s.index = gpu;
  s.guaranteed = MilliGpu(milli);
  s.limit = MilliGpu(std::min<int64_t>(1000, 2 * milli));
  s.memory = s.memory_limit = MemoryMiB(mib);
  pod.assignment.gpus.push_back(std::move(s));
  return pod;
}

// The pending pod: a quarter GPU (burst half), 10 GiB; 4 CPUs and 16 GiB of
// the host (which count where the node's host is known).
constexpr char kPod[] =
    R"({"metadata":{"name":"resnet-serving-x2kqp","namespace":"ml","uid":"7d1e4b2a-2222-4c3d-8e9f-000000000006",)"
    R"("annotations":{"tessera.io/gpu-fraction":"0.25","tessera.io/gpu-fraction-limit":"0.5",)"
    R"("tessera.io/gpu-memory":"10Gi"}},"spec":{"containers":[{"name":"main","image":"inference:1.0",)"
    R"("resources":{"requests":{"cpu":"4","memory":"16Gi"}}}]}})";
constexpr HostRequest kPendingPodHost{.cpu = MilliCpu(4000), .memory = MemoryMiB(16384)};

// A node's host where it is known: 96 CPUs, 1 TiB; each pod holding a share
// asks 3 CPUs and 24 GiB of it.
HostResources NodeHost() {
  return HostResources{.cpu_capacity = MilliCpu(96000), .cpu_used = MilliCpu(0),
                       .memory_capacity = MemoryMiB(1 << 20), .memory_used = MemoryMiB(0)};
}
constexpr HostRequest kSharePodHost{.cpu = MilliCpu(3000), .memory = MemoryMiB(24576)};

// Which policy file, and whether nodes report their host CPU and memory (as
// the Kubernetes watch always has them: host-resources and host-stranding
// then weigh them) or not (a cluster file without allocatable).
struct Setup {
  const char* policy;
  bool host_known;
};
constexpr Setup kDefaultPolicy{"default-policy.yaml", false};
constexpr Setup kDefaultPolicyWithHost{"default-policy.yaml", true};
constexpr Setup kGpuShare{"binpack-policy.yaml", false};

// One cluster, one policy, the service over them and a names-only body.
struct Fixture {
  ClusterModel model;
  std::shared_ptr<const ClusterSnapshot> snapshot;
  std::shared_ptr<const Profile> profile;
  MetricsRegistry metrics;
  // One handle per score pool a service was made with: a service points to its handle.
  std::map<WorkerPool*, std::unique_ptr<testing::FunctionHandle>> handles;
  std::unique_ptr<ExtenderService> service;
  std::string body;
  std::string error;
  int64_t nodes = 0;
  int64_t binds = 0;

  // Binds a quarter GPU on the next node, or takes the last such pod off
  // again, so that the cluster stays as it was on average; then publishes.
  void BindOrUnbind() {
    const std::string uid = absl::StrCat("moving-", binds / 2);
    if (binds % 2 == 0) {
      model.UpsertPod(Share(uid, NodeName((binds / 2) % nodes), 7, 250, 10240));
    } else {
      model.RemovePod(uid);
    }
    ++binds;
    snapshot = model.Publish();
  }
  [[nodiscard]] std::unique_ptr<ExtenderService> NewService(WorkerPool* score_pool = nullptr) {
    std::unique_ptr<testing::FunctionHandle>& handle = handles[score_pool];
    if (handle == nullptr) {
      handle = std::make_unique<testing::FunctionHandle>();
      handle->snapshot = [this] { return snapshot; };
      handle->profile = [this] { return profile; };
      handle->pool = score_pool;
    }
    return std::make_unique<ExtenderService>(*handle, metrics);
  }
};

std::unique_ptr<Fixture> BuildFixture(const Setup& setup, int64_t n) {
  auto f = std::make_unique<Fixture>();
  f->nodes = n;
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyFile(absl::StrCat(TESSERA_SOURCE_DIR, "/config/examples/", setup.policy), registry);
  if (!profile.ok()) {
    f->error = std::string(profile.status().message());
    return f;
  }
  f->profile = *profile;
  std::string names;
  int64_t pods = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::string name = NodeName(i);
    f->model.UpsertNode(name, A100s(), absl::OkStatus(), setup.host_known ? std::optional(NodeHost()) : std::nullopt);
    // ~15% full nodes, the rest with each GPU shared with probability ~45%.
    const uint64_t load = Mix(static_cast<uint64_t>(i)) % 100;
    for (int32_t g = 0; g < kGpusPerNode; ++g) {
      const uint64_t h = Mix(static_cast<uint64_t>(i) * 16 + static_cast<uint64_t>(g));
      const int64_t shares = load < 15 ? 4 : (h % 100 < 45 ? 1 + static_cast<int64_t>((h >> 8) % 3) : 0);
      for (int64_t k = 0; k < shares; ++k) {
        const int64_t milli = load < 15 ? 250 : 100 * (1 + static_cast<int64_t>((h >> (12 + 2 * k)) % 3));
        PodHolding pod = Share(absl::StrCat(name, "-", g, "-", k), name, g, milli, 8192);
        if (setup.host_known) pod.host = kSharePodHost;
        f->model.UpsertPod(std::move(pod));
        ++pods;
      }
    }
    absl::StrAppend(&names, i == 0 ? "" : ",", "\"", name, "\"");
  }
  f->snapshot = f->model.Publish();
  f->service = f->NewService();
  f->body = absl::StrCat(R"({"Pod":)", kPod, R"(,"Nodes":null,"NodeNames":[)", names, "]}");
  std::fprintf(stderr, "fixture %s%s: %lld nodes, %lld pods, body %zu B, memoizable %d\n", setup.policy,
               setup.host_known ? " (host known)" : "", static_cast<long long>(n), static_cast<long long>(pods),
               f->body.size(), f->profile->memoizable());
  return f;
}

// One fixture per policy and size, built on first use, kept for the run.
Fixture* GetFixture(benchmark::State& state, const Setup& setup) {
  static std::map<std::tuple<std::string, bool, int64_t>, std::unique_ptr<Fixture>> cache;
  std::unique_ptr<Fixture>& f = cache[{setup.policy, setup.host_known, state.range(0)}];
  if (f == nullptr) f = BuildFixture(setup, state.range(0));
  if (!f->error.empty()) {
    state.SkipWithError(f->error.c_str());
    return nullptr;
  }
  return f.get();
}

void Prioritize(benchmark::State& state, const ExtenderService& service, const std::string& body) {
  absl::StatusOr<std::string> out = service.Prioritize(body);
  if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  benchmark::DoNotOptimize(out);
}

void BM_PrioritizeColdMemo(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  std::unique_ptr<ExtenderService> service;
  for (auto _ : state) {
    state.PauseTiming();
    service = f->NewService();  // a fresh memo; the last one is freed untimed
    state.ResumeTiming();
    Prioritize(state, *service, f->body);
  }
}

void BM_PrioritizeColdMemoParallel(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  static WorkerPool pool(WorkerPool::DefaultThreads());
  std::unique_ptr<ExtenderService> service;
  for (auto _ : state) {
    state.PauseTiming();
    service = f->NewService(&pool);  // a fresh memo; the last one is freed untimed
    state.ResumeTiming();
    Prioritize(state, *service, f->body);
  }
  state.counters["helpers"] = pool.threads();
}

// A pod of a shape the memo has not seen, on a memo that has served many
// (the service lives on): each request asks for 1 MiB more GPU memory than
// the last, which changes the shape but not where the pod fits.
void BM_PrioritizeNewShape(benchmark::State& state, const Setup& setup, bool parallel) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  static WorkerPool pool(WorkerPool::DefaultThreads());
  const std::unique_ptr<ExtenderService> service = f->NewService(parallel ? &pool : nullptr);
  const std::string memory = R"("tessera.io/gpu-memory":"10Gi")";
  const size_t at = f->body.find(memory);
  if (at == std::string::npos) {
    state.SkipWithError("the fixture's pod has no gpu-memory annotation");
    return;
  }
  int64_t mib = 10240;
  std::string body;
  for (auto _ : state) {
    state.PauseTiming();
    body = f->body;
    body.replace(at, memory.size(), absl::StrCat(R"("tessera.io/gpu-memory":")", ++mib, R"(Mi")"));
    state.ResumeTiming();
    Prioritize(state, *service, body);
  }
  state.counters["helpers"] = parallel ? pool.threads() : 0;
}

void BM_PrioritizeAfterOneBind(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  Prioritize(state, *f->service, f->body);  // warm
  for (auto _ : state) {
    state.PauseTiming();
    f->BindOrUnbind();
    state.ResumeTiming();
    Prioritize(state, *f->service, f->body);
  }
}

void BM_PrioritizeUnchanged(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  for (auto _ : state) Prioritize(state, *f->service, f->body);
}

std::vector<const NodeView*> Views(const ClusterSnapshot& s) {
  std::vector<const NodeView*> views;
  views.reserve(s.node_count());
  for (NodeIndex i = 0; i < s.node_count(); ++i) views.push_back(&s.View(i));
  return views;
}

const CycleState& QuarterGpu() {
  static const CycleState r([] {
    PodGpuRequest p;
    p.whole_gpu = false;
    p.guaranteed = MilliGpu(250);
    p.limit = MilliGpu(500);
    p.memory = p.memory_limit = MemoryMiB(10240);
    p.host = kPendingPodHost;
    return p;
  }());
  return r;
}

void BM_ProfileScore(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  const std::vector<const NodeView*> views = Views(*f->snapshot);
  for (auto _ : state) benchmark::DoNotOptimize(f->profile->Score(QuarterGpu(), views, nullptr));
}

void BM_MemoScoreAfterOneBind(benchmark::State& state, const Setup& setup) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  const ScoreMemo memo(f->profile);
  (void)memo.Score(QuarterGpu(), Views(*f->snapshot), nullptr);  // warm
  const uint64_t warm = memo.counters().nodes_computed;
  std::vector<const NodeView*> views;
  for (auto _ : state) {
    state.PauseTiming();
    f->BindOrUnbind();
    views = Views(*f->snapshot);
    state.ResumeTiming();
    benchmark::DoNotOptimize(memo.Score(QuarterGpu(), views, nullptr));
  }
  state.counters["computed_per_request"] = benchmark::Counter(
      static_cast<double>(memo.counters().nodes_computed - warm), benchmark::Counter::kAvgIterations);
  state.counters["memoized_nodes"] = static_cast<double>(memo.memoized_nodes());
}

// ScoreMemo::Score on a fresh memo: the policy stage of BM_PrioritizeColdMemo
// (Parallel), without decoding the request and encoding the answer.
void BM_MemoScoreCold(benchmark::State& state, const Setup& setup, bool parallel) {
  Fixture* f = GetFixture(state, setup);
  if (f == nullptr) return;
  static WorkerPool pool(WorkerPool::DefaultThreads());
  const std::vector<const NodeView*> views = Views(*f->snapshot);
  std::unique_ptr<ScoreMemo> memo;
  for (auto _ : state) {
    state.PauseTiming();
    memo = std::make_unique<ScoreMemo>(f->profile, ScoreMemo::kDefaultRequests, parallel ? &pool : nullptr);
    state.ResumeTiming();
    benchmark::DoNotOptimize(memo->Score(QuarterGpu(), views, nullptr));
  }
  state.counters["helpers"] = parallel ? pool.threads() : 0;
}

#define TESSERA_MEMO_BENCHMARK(fn)                                                                  \
  BENCHMARK_CAPTURE(fn, default_policy, kDefaultPolicy)                                             \
      ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);                              \
  BENCHMARK_CAPTURE(fn, default_policy_host_known, kDefaultPolicyWithHost)                          \
      ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);                              \
  BENCHMARK_CAPTURE(fn, gpu_share, kGpuShare)                                                       \
      ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond)

TESSERA_MEMO_BENCHMARK(BM_PrioritizeColdMemo);
BENCHMARK_CAPTURE(BM_PrioritizeColdMemoParallel, default_policy, kDefaultPolicy)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();  // helpers' time counts
BENCHMARK_CAPTURE(BM_PrioritizeColdMemoParallel, default_policy_host_known, kDefaultPolicyWithHost)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PrioritizeNewShape, default_policy, kDefaultPolicy, false)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PrioritizeNewShape, default_policy_parallel, kDefaultPolicy, true)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PrioritizeNewShape, default_policy_host_known, kDefaultPolicyWithHost, false)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PrioritizeNewShape, default_policy_host_known_parallel, kDefaultPolicyWithHost, true)
    ->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();
TESSERA_MEMO_BENCHMARK(BM_PrioritizeAfterOneBind);
TESSERA_MEMO_BENCHMARK(BM_PrioritizeUnchanged);
TESSERA_MEMO_BENCHMARK(BM_ProfileScore);
TESSERA_MEMO_BENCHMARK(BM_MemoScoreAfterOneBind);
BENCHMARK_CAPTURE(BM_MemoScoreCold, default_policy, kDefaultPolicy, false)
    ->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_MemoScoreCold, default_policy_parallel, kDefaultPolicy, true)
    ->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
