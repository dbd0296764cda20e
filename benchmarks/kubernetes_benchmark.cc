// The Kubernetes side of Tessera at production size, without the network:
//  - initial sync: list pages of 5000 nodes x 8 GPUs and 100 000 pods decoded
//    and applied to the model (what a restart costs before /readyz);
//  - watch throughput: pod MODIFIED events parsed and applied, published in
//    batches as the reflector does after each read;
//  - bind latency: check, choose, reserve and publish, with a PodApi that
//    answers at once (the API server's own time excluded).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/policy_loader.h"
#include "k8s/client/reflector.h"
#include "k8s/client/watch_event.h"
#include "k8s/sync/node_sink.h"
#include "k8s/sync/pod_sink.h"
#include "policies/builtin_registry.h"
#include "scheduler/common/log.h"
#include "extender/service/binder.h"

namespace tessera {
namespace {

constexpr int kGpusPerNode = 8;
constexpr int kPageSize = 500;

std::string NodeName(int i) { return absl::StrCat("gpu-node-", i); }

// A Node as the API server lists it, with the usual bulk (labels, conditions,
// images) around the few fields Tessera reads.
std::string NodeJson(int i, const std::string& resource_version) {
  std::string inventory = "[";
  for (int g = 0; g < kGpusPerNode; ++g) {
    absl::StrAppend(&inventory, g ? "," : "", R"({\"index\":)", g, R"(,\"uuid\":\"GPU-)", i, "-", g,
                    R"(\",\"model\":\"NVIDIA-A100-SXM4-80GB\",\"memoryMiB\":81920,\"numa\":)", g / 4, "}");
  }
  inventory += "]";
  return absl::StrCat(
      R"({"metadata":{"name":")", NodeName(i), R"(","uid":"node-uid-)", i, R"(","resourceVersion":")",
      resource_version,
      R"(","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"kubernetes.io/arch":"amd64","kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"p4d.24xlarge","topology.kubernetes.io/zone":"us-east-1a","nvidia.com/gpu.count":"8","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB"},"annotations":{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true","tessera.io/gpu-inventory":")",
      inventory,
      R"("}},"spec":{"podCIDR":"10.244.1.0/24","providerID":"aws:///us-east-1a/i-0123456789"},"status":{"capacity":{"cpu":"96","memory":"1152Gi","nvidia.com/gpu":"8","pods":"110"},"allocatable":{"cpu":"95500m","memory":"1100Gi","nvidia.com/gpu":"8","pods":"110"},"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"DiskPressure","status":"False"},{"type":"PIDPressure","status":"False"},{"type":"Ready","status":"True","reason":"KubeletReady"}],"addresses":[{"type":"InternalIP","address":"10.0.1.2"},{"type":"Hostname","address":"ip-10-0-1-2"}],"nodeInfo":{"kubeletVersion":"v1.26.5","containerRuntimeVersion":"containerd://1.6.21","osImage":"Ubuntu 22.04.2 LTS"}}})");
}

// A running pod holding `milli` of one GPU, with a realistic spec and status.
std::string PodJson(int i, int node, int gpu, int milli, const std::string& resource_version) {
  return absl::StrCat(
      R"({"metadata":{"name":"infer-)", i, R"(","namespace":"ml","uid":"pod-uid-)", i, R"(","resourceVersion":")",
      resource_version,
      R"(","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"inference","pod-template-hash":"5d8f7c9b4"},"annotations":{"tessera.io/gpu-fraction":")",
      milli / 10, R"(%","tessera.io/gpu-assignment":"{\"node\":\")", NodeName(node), R"(\",\"gpus\":[{\"index\":)", gpu,
      R"(,\"uuid\":\"GPU-)", node, "-", gpu, R"(\",\"milli\":)", milli,
      R"(,\"limitMilli\":)", milli, R"(,\"memoryMiB\":8192,\"memoryLimitMiB\":8192}]}","tessera.io/visible-devices":"GPU-)",
      node, "-", gpu,
      R"("},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"infer-5d8f7c9b4","uid":"rs-uid","controller":true}]},"spec":{"schedulerName":"tessera-scheduler","nodeName":")",
      NodeName(node),
      R"(","containers":[{"name":"server","image":"nvcr.io/nvidia/tritonserver:23.05-py3","resources":{"requests":{"cpu":"4","memory":"16Gi"},"limits":{"cpu":"8","memory":"32Gi"}},"env":[{"name":"NVIDIA_VISIBLE_DEVICES","valueFrom":{"fieldRef":{"fieldPath":"metadata.annotations['tessera.io/visible-devices']"}}}],"ports":[{"containerPort":8000,"protocol":"TCP"}],"volumeMounts":[{"name":"models","mountPath":"/models"}]}],"volumes":[{"name":"models","persistentVolumeClaim":{"claimName":"models"}}],"restartPolicy":"Always","tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]},"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"},{"type":"PodScheduled","status":"True"}],"hostIP":"10.0.1.2","podIP":"10.244.1.17","startTime":"2026-01-01T00:00:05Z","containerStatuses":[{"name":"server","ready":true,"restartCount":0,"image":"nvcr.io/nvidia/tritonserver:23.05-py3","containerID":"containerd://abc"}]}})");
}

// List bodies of `count` objects, `kPageSize` per page.
template <typename Item>
std::vector<std::string> Pages(int count, const std::string& kind, Item item) {
  std::vector<std::string> pages;
  for (int first = 0; first < count; first += kPageSize) {
    std::string page = absl::StrCat(R"({"kind":")", kind, R"(","apiVersion":"v1","metadata":{"resourceVersion":"42")",
                                    first + kPageSize < count ? R"(,"continue":"more")" : "", R"(},"items":[)");
    for (int i = first; i < std::min(count, first + kPageSize); ++i) {
      if (i > first) page += ',';
      page += item(i);
    }
    page += "]}";
    pages.push_back(std::move(page));
  }
  return pages;
}

// Pods spread over nodes and GPUs, 100 milli each: at most 10 per GPU.
int NodeOf(int pod, int nodes) { return pod % nodes; }
int GpuOf(int pod, int nodes) { return (pod / nodes) % kGpusPerNode; }

void Apply(const std::vector<std::string>& pages, k8s::ReflectorSink& sink, simdjson::dom::parser& parser) {
  sink.BeginList();
  for (const std::string& page : pages) {
    absl::StatusOr<k8s::ListPage> applied = k8s::ApplyListPage(parser, page, sink, [](const absl::Status&) {});
    if (!applied.ok() || applied->malformed != 0) std::abort();
  }
  sink.EndList();
  sink.Flush();
}

void BM_InitialSync(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = static_cast<int>(state.range(1));
  const std::vector<std::string> node_pages =
      Pages(nodes, "NodeList", [](int i) { return NodeJson(i, "7"); });
  const std::vector<std::string> pod_pages = Pages(pods, "PodList", [&](int i) {
    return PodJson(i, NodeOf(i, nodes), GpuOf(i, nodes), 100, "7");
  });
  size_t bytes = 0;
  for (const auto& p : node_pages) bytes += p.size();
  for (const auto& p : pod_pages) bytes += p.size();
  simdjson::dom::parser parser;
  for (auto _ : state) {
    ClusterModel model;
    PodDirectory directory;
    k8s::NodeSink node_sink(model, nullptr);
    k8s::PodSink pod_sink(model, directory, nullptr);
    Apply(node_pages, node_sink, parser);
    Apply(pod_pages, pod_sink, parser);
    benchmark::DoNotOptimize(model.Current()->gpu_count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["list_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_InitialSync)->Args({1000, 20000})->Args({5000, 100000})->Unit(benchmark::kMillisecond);

// Pod events as they arrive in a busy cluster: pods moving between phases and
// being re-annotated. Published every `batch` events, as after one socket read.
void BM_WatchPodEvents(benchmark::State& state) {
  const int nodes = 5000;
  const int batch = static_cast<int>(state.range(0));
  ClusterModel model;
  PodDirectory directory;
  k8s::NodeSink node_sink(model, nullptr);
  k8s::PodSink pod_sink(model, directory, nullptr);
  simdjson::dom::parser parser;
  Apply(Pages(nodes, "NodeList", [](int i) { return NodeJson(i, "7"); }), node_sink, parser);
  Apply(Pages(100000, "PodList", [&](int i) { return PodJson(i, NodeOf(i, nodes), GpuOf(i, nodes), 100, "7"); }),
        pod_sink, parser);
  constexpr int kEvents = 20000;
  std::vector<std::string> lines;
  lines.reserve(kEvents);
  for (int i = 0; i < kEvents; ++i) {
    const int pod = (i * 7919) % 100000;
    lines.push_back(absl::StrCat(R"({"type":"MODIFIED","object":)",
                                 PodJson(pod, NodeOf(pod, nodes), GpuOf(pod, nodes), 100 + 10 * (i % 2),
                                         std::to_string(100 + i)),
                                 "}"));
  }
  int64_t applied = 0;
  for (auto _ : state) {
    int in_batch = 0;
    for (const std::string& line : lines) {
      absl::StatusOr<k8s::WatchEvent> event = k8s::ParseWatchEvent(parser, line);
      if (!event.ok() || !pod_sink.Upsert(event->object).ok()) std::abort();
      if (++in_batch == batch) {
        pod_sink.Flush();
        in_batch = 0;
      }
    }
    pod_sink.Flush();
    applied += kEvents;
  }
  state.SetItemsProcessed(applied);
}
BENCHMARK(BM_WatchPodEvents)->Arg(1)->Arg(20)->Unit(benchmark::kMillisecond);

// Answers every write at once: the bind's own cost, without the API server.
class InstantPodApi final : public k8s::PodApi {
 public:
  absl::StatusOr<PodRecord> GetPod(std::string_view, std::string_view, absl::Time) override {
    return absl::NotFoundError("not used");
  }
  absl::Status Annotate(const k8s::PodRef&, const std::vector<std::pair<std::string, std::string>>&) override {
    return absl::OkStatus();
  }
  absl::Status Bind(const k8s::PodRef&, std::string_view, const Annotations&, absl::Time) override {
    return absl::OkStatus();
  }
  absl::Status Evict(const k8s::PodRef&, absl::Time) override { return absl::OkStatus(); }
  absl::Status Nominate(const k8s::PodRef&, std::string_view, absl::Time) override { return absl::OkStatus(); }
};

void BM_BindExcludingApiServer(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  ClusterModel model;
  PodDirectory directory;
  k8s::NodeSink node_sink(model, nullptr);
  simdjson::dom::parser parser;
  Apply(Pages(nodes, "NodeList", [](int i) { return NodeJson(i, "7"); }), node_sink, parser);
  const PluginRegistry registry = NewBuiltinRegistry();
  const std::shared_ptr<const Profile> profile = *LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n", "policy.yaml",
      registry);
  InstantPodApi api;
  MetricsRegistry metrics;
  Binder binder(model, directory, api, [&] { return profile; }, metrics);
  // Per-bind info lines would measure stderr, not the bind.
  SetMinLogLevel(LogLevel::kError);
  int64_t next = 0;
  // Steady state: each node holds 40 pods of 0.1 GPU (half full); the pod
  // bound 40 rounds ago leaves as a new one arrives.
  const int64_t resident = int64_t{nodes} * 40;
  std::vector<std::string> node_names;
  for (int i = 0; i < nodes; ++i) node_names.push_back(NodeName(i));
  for (auto _ : state) {
    state.PauseTiming();
    PodRecord pod;
    pod.uid = absl::StrCat("bind-uid-", next);
    pod.namespace_name = "ml";
    pod.name = absl::StrCat("bind-", next);
    pod.annotations["tessera.io/gpu-fraction"] = "0.1";
    directory.Upsert(pod);
    if (next >= resident) {
      const std::string leaving = absl::StrCat("bind-uid-", next - resident);
      model.ReleaseReservation(leaving);
      directory.Remove(leaving);
    }
    const std::string& node = node_names[static_cast<size_t>(next % nodes)];
    ++next;
    state.ResumeTiming();
    const absl::Status st = binder.Bind({.pod_name = pod.name, .pod_namespace = pod.namespace_name,
                                         .pod_uid = pod.uid, .node = node});
    if (!st.ok()) {
      state.SkipWithError(std::string(st.message()).c_str());
      break;
    }
  }
  SetMinLogLevel(LogLevel::kInfo);
}
BENCHMARK(BM_BindExcludingApiServer)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
