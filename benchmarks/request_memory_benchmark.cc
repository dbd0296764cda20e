// Memory per request body: how many bytes Tessera holds at its peak while it
// decodes and answers one filter or prioritize request, per byte of body.
// This is the amplification that ties the body limits to the chart's memory
// limit (extender/server/request_memory.h, docs/operations/limits.md).
//
//   ./build/benchmarks/request_memory_benchmark
//
// The bodies are full-node-object requests (nodeCacheCapable=false, the
// largest form) made of the Pod and Node objects kube-scheduler v1.26 sent
// (data/kube-scheduler-v1.26/filter-request-fullnodes.json), the nodes repeated
// under new names up to 1, 8, 32 and 128 MiB. The cluster model is empty and
// the pod asks for no GPU, so every node passes filter and the answer echoes
// every Node object: the largest answer a body of that size can get.
//
// Each request is answered through Router::Handle on a fresh thread (so the
// per-thread JSON parser starts empty, as on a server's first big request),
// while a counting allocator (operator new/delete below) tracks the bytes
// allocated. Counters, per body byte:
//   peak_per_body_byte      the most bytes held at once, body included
//   retained_per_body_byte  what is still held when the answer has been
//                           dropped and before the thread exits (buffers an
//                           io thread keeps between requests)
// plus the absolute peak_MiB and body_MiB. Time per iteration is a by-product.
//
// BM_FilterUnknownNamesPeakMemory is the other extreme: the most node names a
// request may carry (100 000, short), none known, for a pod that asks for a
// GPU, so that every name gets its own reason. Its answer is several times its
// small body, bounded by the node cap: part of kPerRequestBytes
// (extender/service/request_memory.h), not of the per-byte factor.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "config/policy_loader.h"
#include "extender/service/extender_service.h"
#include "extender/service/router.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"
#include "test/testing/function_handle.h"

// --- the counting allocator ---------------------------------------------------
//
// Counts what malloc really hands out (malloc_usable_size), so a string's
// spare capacity and simdjson's padded buffers are included.

namespace {

std::atomic<int64_t> g_allocated{0};
std::atomic<int64_t> g_peak{0};

void* Counted(void* p) {
  if (p == nullptr) return p;
  const int64_t now = g_allocated.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                      static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void Uncounted(void* p) {
  if (p == nullptr) return;
  g_allocated.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}

void* AllocateOrThrow(std::size_t n) {
  void* p = Counted(std::malloc(n == 0 ? 1 : n));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* AllocateAlignedOrThrow(std::size_t n, std::align_val_t align) {
  const std::size_t a = static_cast<std::size_t>(align);
  void* p = Counted(std::aligned_alloc(a, (std::max<std::size_t>(n, 1) + a - 1) / a * a));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return AllocateOrThrow(n); }
void* operator new[](std::size_t n) { return AllocateOrThrow(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Counted(std::malloc(n == 0 ? 1 : n)); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Counted(std::malloc(n == 0 ? 1 : n)); }
void* operator new(std::size_t n, std::align_val_t a) { return AllocateAlignedOrThrow(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return AllocateAlignedOrThrow(n, a); }
void operator delete(void* p) noexcept { Uncounted(p); }
void operator delete[](void* p) noexcept { Uncounted(p); }
void operator delete(void* p, std::size_t) noexcept { Uncounted(p); }
void operator delete[](void* p, std::size_t) noexcept { Uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { Uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Uncounted(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { Uncounted(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { Uncounted(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Uncounted(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Uncounted(p); }

namespace tessera {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A request of about `bytes`: the recorded pod and nodes, nodes repeated
// under new names.
std::string Body(const std::string& verb, int64_t bytes) {
  const std::string path = TESSERA_DATA_DIR "/kube-scheduler-v1.26/" + verb + "-request-fullnodes.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::ordered_json recorded = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (recorded.is_discarded() || !recorded["Nodes"]["items"].is_array() || recorded["Nodes"]["items"].empty()) {
    std::fprintf(stderr, "request_memory_benchmark: %s: cannot read a NodeList from it\n", path.c_str());
    std::exit(1);
  }
  const nlohmann::ordered_json& nodes = recorded["Nodes"]["items"];
  std::string out = absl::StrCat(R"({"Pod":)", recorded["Pod"].dump(), R"(,"Nodes":{"metadata":{},"items":[)");
  for (size_t i = 0; static_cast<int64_t>(out.size()) < bytes; ++i) {
    nlohmann::ordered_json node = nodes[i % nodes.size()];
    node["metadata"]["name"] = absl::StrCat("gpu-node-", i);
    if (i > 0) out += ',';
    out += node.dump();
  }
  out += R"(]},"NodeNames":null})";
  return out;
}

struct Service {
  ClusterModel model;
  PluginRegistry registry = NewBuiltinRegistry();
  MetricsRegistry metrics;
  std::shared_ptr<const Profile> profile;
  std::shared_ptr<const ClusterSnapshot> snapshot;
  testing::FunctionHandle handle;
  std::unique_ptr<ExtenderService> service;
  std::unique_ptr<Router> router;
};

Service& GetService() {
  static Service* s = [] {
    auto* s = new Service();
    absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
        "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n", "policy.yaml",
        s->registry);
    if (!profile.ok()) {
      std::fprintf(stderr, "request_memory_benchmark: policy: %s\n", profile.status().ToString().c_str());
      std::exit(1);
    }
    s->profile = *profile;
    s->snapshot = s->model.Publish();
    s->handle.snapshot = [s] { return s->snapshot; };
    s->handle.profile = [s] { return s->profile; };
    s->service = std::make_unique<ExtenderService>(s->handle, s->metrics);
    s->router = std::make_unique<Router>(RouterOptions{}, *s->service, s->metrics);
    return s;
  }();
  return *s;
}

void RequestPeakMemory(benchmark::State& state, const std::string& verb) {
  const Router& router = *GetService().router;
  HttpRequest request{boost::beast::http::verb::post, "/" + verb, 11};
  request.body() = Body(verb, state.range(0) * kMiB);
  request.prepare_payload();
  const double body = static_cast<double>(request.body().size());
  int64_t peak = 0, retained = 0;
  int status = 0;
  for (auto _ : state) {
    // One thread per request: its thread-local parser starts empty.
    std::thread([&] {
      const int64_t before = g_allocated.load();
      g_peak.store(before);
      {
        HttpResponse response = router.Handle(request);
        status = response.result_int();
        benchmark::DoNotOptimize(response);
      }
      peak = g_peak.load() - before + static_cast<int64_t>(body);
      retained = g_allocated.load() - before;
    }).join();
  }
  if (status != 200) state.SkipWithError(absl::StrCat(verb, " answered HTTP ", status).c_str());
  state.counters["body_MiB"] = body / static_cast<double>(kMiB);
  state.counters["peak_MiB"] = static_cast<double>(peak) / static_cast<double>(kMiB);
  state.counters["peak_per_body_byte"] = static_cast<double>(peak) / body;
  state.counters["retained_per_body_byte"] = static_cast<double>(retained) / body;
}

// `names` node names, for the recorded pod asking for half a GPU.
std::string UnknownNamesBody(int64_t names) {
  const std::string path = TESSERA_DATA_DIR "/kube-scheduler-v1.26/filter-request-fullnodes.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json pod = nlohmann::ordered_json::parse(text.str(), nullptr, false)["Pod"];
  pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "0.5";
  std::string out = absl::StrCat(R"({"Pod":)", pod.dump(), R"(,"Nodes":null,"NodeNames":[)");
  for (int64_t i = 0; i < names; ++i) absl::StrAppend(&out, i > 0 ? "," : "", "\"n", i, "\"");
  out += "]}";
  return out;
}

void BM_FilterUnknownNamesPeakMemory(benchmark::State& state) {
  const Router& router = *GetService().router;
  HttpRequest request{boost::beast::http::verb::post, "/filter", 11};
  request.body() = UnknownNamesBody(state.range(0));
  request.prepare_payload();
  const double body = static_cast<double>(request.body().size());
  int64_t peak = 0;
  size_t answer = 0;
  for (auto _ : state) {
    std::thread([&] {
      const int64_t before = g_allocated.load();
      g_peak.store(before);
      {
        HttpResponse response = router.Handle(request);
        answer = response.body().size();
        benchmark::DoNotOptimize(response);
      }
      peak = g_peak.load() - before + static_cast<int64_t>(body);
    }).join();
  }
  state.counters["body_MiB"] = body / static_cast<double>(kMiB);
  state.counters["answer_MiB"] = static_cast<double>(answer) / static_cast<double>(kMiB);
  state.counters["peak_MiB"] = static_cast<double>(peak) / static_cast<double>(kMiB);
  state.counters["peak_per_body_byte"] = static_cast<double>(peak) / body;
}

void BM_FilterPeakMemory(benchmark::State& state) { RequestPeakMemory(state, "filter"); }
void BM_PrioritizePeakMemory(benchmark::State& state) { RequestPeakMemory(state, "prioritize"); }

// Body sizes in MiB. Each iteration is one request; a few suffice, the
// counters do not vary between them.
BENCHMARK(BM_FilterPeakMemory)->Arg(1)->Arg(8)->Arg(32)->Arg(128)->Iterations(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrioritizePeakMemory)->Arg(1)->Arg(8)->Arg(32)->Arg(128)->Iterations(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FilterUnknownNamesPeakMemory)->Arg(100'000)->Iterations(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
