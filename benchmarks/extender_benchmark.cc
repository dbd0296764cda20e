// The extender's hot paths at production sizes: 100, 1000 and 5000 nodes of
// 8 GPUs each, with about half the GPUs already shared by running pods. The
// cluster is built in code (deterministic), once per size, outside the timing.
//
//   ./build/benchmarks/extender_benchmark --benchmark_min_time=0.2
//
// (or build-bench/ for a dedicated Release tree; --benchmark_filter=Names for
// a quick pass). Each cluster's shape and request sizes go to stderr. kube-scheduler waits on BM_Filter* and BM_Prioritize*: they
// are the whole verb on the request body (decode + policy + encode). The
// other cases split that into its stages:
//
//   BM_Decode*        k8s::DecodeExtenderArgs on the request body
//   BM_Policy*        CandidateNodes + Profile::Filter per node / Profile::Score
//   BM_Encode*        k8s::EncodeFilterResult (every node passing) and
//                     EncodeHostPriorityList
//
// BM_FilterRefusedNames is filter for a pod that fits on no node (8 whole
// GPUs of a model no node has), with and without the record of refused pods the GPU map reads
// (record=1 is how the program runs; extender/service/recent_refusals.h).
// BM_FilterNamesWhileWriterPublishes is the names-only filter while another
// thread changes the model and publishes 50 times a second (one of them a
// node joining or leaving): its p50/p99/p99.9/max counters show how long a request
// waits on a writer (issue 46; changes_per_s=0 is the same without one).
// BM_GpuMapPage renders GET /ui (extender/service/gpu_map_page.h) over the
// cluster with 1000 refused pods kept: page 1 (100 nodes), and a search that
// reads every pod's name (query=1).
//
// "Names" requests carry NodeNames (nodeCacheCapable=true); "FullNodes" carry
// Nodes.items, v1.Node objects of 5-6 KB like kube-scheduler sends
// (nodeCacheCapable=false). Arguments: nodes, and the pod's gpu-count (1 or 2).
// The pod asks for tessera.io/gpu-fraction 0.25, gpu-fraction-limit 0.5 and
// gpu-memory 10Gi per GPU.
//
// The cluster does not change between iterations, so BM_PrioritizeNames is
// answered from the score memo after its first call (every node's version is
// the same); score_memo_benchmark measures the memo cold and after binds,
// BM_PolicyPrioritize* the profile without it. FullNodes views carry no
// version and are computed every call.
//
// Targets (2-core machine): names-only at 5000 nodes <= 2 ms per call; a full
// NodeList of 1000 nodes <= 25 ms per call.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "config/policy_loader.h"
#include "k8s/extender_args.h"
#include "k8s/extender_results.h"
#include "k8s/node_inventory.h"
#include "scheduler/model/mig_geometry.h"
#include "k8s/pod_gpu_request.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/metrics/metrics.h"
#include "extender/service/candidate_nodes.h"
#include "extender/service/extender_service.h"
#include "extender/service/gpu_map_page.h"
#include "extender/service/recent_refusals.h"
#include "test/testing/function_handle.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;  // keeps Go's field order in the node objects

constexpr int64_t kGpusPerNode = 8;
constexpr int64_t kGiB = 1024;  // in MiB

// The shipped default policy (config/examples/default-policy.yaml).
constexpr std::string_view kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    weight: 1
    args: {nodeStrategy: binpack, gpuStrategy: binpack, gpuMemoryReserve: 256Mi, maxLimitPercent: 200}
)";

// The same, and MIG instances placed too: the policy of the MIG cluster.
constexpr std::string_view kMigPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    weight: 1
    args: {nodeStrategy: binpack, gpuStrategy: binpack, gpuMemoryReserve: 256Mi, maxLimitPercent: 200}
  - name: mig-partition
    weight: 1
)";

// --- deterministic pseudo-randomness --------------------------------------------

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Hash(uint64_t a, uint64_t b, uint64_t c = 0) { return Mix(Mix(Mix(a) ^ b) ^ c); }

// The low `digits` hex digits of `v`.
std::string Hex(uint64_t v, int digits) {
  const uint64_t mask = digits >= 16 ? ~0ULL : (1ULL << (4 * digits)) - 1;
  return absl::StrFormat("%0*x", digits, v & mask);
}

std::string FakeUuid(uint64_t a, uint64_t b) {
  const uint64_t h1 = Hash(a, b, 1), h2 = Hash(a, b, 2);
  return absl::StrFormat("%s-%s-4%s-a%s-%s", Hex(h1 >> 32, 8), Hex(h1 >> 16, 4), Hex(h1, 3), Hex(h2 >> 48, 3),
                         Hex(h2, 12));
}

// --- the synthetic cluster -------------------------------------------------------

// Every eighth node is a T4 box described only by GPU Feature Discovery labels;
// the rest are A100-80GB boxes with Tessera's inventory annotation.
bool IsT4(int64_t node) { return node % 8 == 7; }

// The MIG cluster is a mixed fleet too: every eighth node (the fourth of
// each eight) is an AMD MI300X box.
bool IsAmd(bool mig_cluster, int64_t node) { return mig_cluster && node % 8 == 3; }

std::string NodeName(int64_t node, bool mig_cluster = false) {
  return absl::StrFormat("%s-%05d", IsT4(node) ? "gpu-t4" : IsAmd(mig_cluster, node) ? "gpu-mi300x" : "gpu-a100", node);
}

// In the MIG cluster, GPUs 0 and 1 of every A100 box (a quarter of its
// GPUs) are in MIG mode: GPU 0 as seven 1g.10gb, GPU 1 as 3g.40gb + 2g.20gb
// + 1g.10gb, as operators cut them for small inference pods.
bool InMigMode(bool mig_cluster, int64_t node, int64_t gpu) {
  return mig_cluster && !IsT4(node) && !IsAmd(mig_cluster, node) && gpu < 2;
}

Json MigInstancesOf(int64_t node, int64_t gpu) {
  Json list = Json::array();
  auto add = [&](const char* profile, int start) {
    list.push_back({{"profile", profile},
                    {"start", start},
                    {"uuid", "MIG-" + FakeUuid(static_cast<uint64_t>(node), static_cast<uint64_t>(100 + gpu * 8 + start))}});
  };
  if (gpu == 0) {
    for (int start = 0; start < 7; ++start) add("1g.10gb", start);
  } else {
    add("3g.40gb", 0);
    add("2g.20gb", 4);
    add("1g.10gb", 6);
  }
  return list;
}

std::string InventoryAnnotation(int64_t node, bool mig_cluster) {
  Json list = Json::array();
  for (int64_t g = 0; g < kGpusPerNode; ++g) {
    list.push_back(Json{{"index", g},
                        {"uuid", "GPU-" + FakeUuid(static_cast<uint64_t>(node), static_cast<uint64_t>(g))},
                        {"model", "NVIDIA-A100-SXM4-80GB"},
                        {"memoryMiB", 81920},
                        {"numa", g < 4 ? 0 : 1}});
    if (IsAmd(mig_cluster, node)) {
      list.back()["model"] = "AMD-Instinct-MI300X";
      list.back()["memoryMiB"] = 196608;
      list.back()["vendor"] = "amd";
    }
    if (InMigMode(mig_cluster, node, g)) list.back()["mig"] = MigInstancesOf(node, g);
  }
  return list.dump();
}

// What pods hold on one GPU. By node: ~15% are saturated (every GPU full, by
// compute on even GPUs and by memory on odd ones), ~5% have one GPU left (a
// 1-GPU pod fits, a 2-GPU pod does not), and on the rest each GPU is shared
// with probability ~45%, by 1-3 pods of 100-500 milli. Overall a bit over
// half the GPUs hold pods.
struct Share {
  int64_t milli, limit, memory_mib;
};

std::vector<Share> SharesOn(int64_t node, int64_t gpu) {
  const bool t4 = IsT4(node);
  const int64_t card = t4 ? 15 * kGiB : 80 * kGiB;
  std::vector<Share> out;
  const uint64_t load = Hash(static_cast<uint64_t>(node), 0xfull) % 100;
  if (load < 15 || (load < 20 && gpu != node % kGpusPerNode)) {
    if (gpu % 2 == 0) {
      for (int k = 0; k < 4; ++k) out.push_back({250, 500, t4 ? 2 * kGiB : 8 * kGiB});
    } else if (t4) {
      out.push_back({300, 600, 8 * kGiB});
    } else {
      out.push_back({300, 600, 36 * kGiB});
      out.push_back({300, 600, 36 * kGiB});
    }
    return out;
  }
  if (load < 20) return out;  // the one free GPU
  const uint64_t h = Hash(static_cast<uint64_t>(node), static_cast<uint64_t>(gpu), 7);
  if (h % 100 >= 45) return out;
  const int pods = 1 + static_cast<int>((h >> 8) % 3);
  int64_t milli_sum = 0, limit_sum = 0, memory_sum = 0;
  static constexpr int64_t kMilli[] = {100, 250, 250, 500};
  static constexpr int64_t kMemoryA100[] = {4 * kGiB, 8 * kGiB, 10 * kGiB, 20 * kGiB};
  static constexpr int64_t kMemoryT4[] = {1 * kGiB, 2 * kGiB, 4 * kGiB, 4 * kGiB};
  for (int k = 0; k < pods; ++k) {
    const uint64_t r = Hash(h, static_cast<uint64_t>(k));
    const int64_t milli = kMilli[r % 4];
    const int64_t limit = std::min<int64_t>(1000, milli * (1 + static_cast<int64_t>((r >> 4) % 2)));
    const int64_t memory = (t4 ? kMemoryT4 : kMemoryA100)[(r >> 8) % 4];
    if (milli_sum + milli > 1000 || limit_sum + limit > 2000 || memory_sum + memory > card - 256) break;
    milli_sum += milli;
    limit_sum += limit;
    memory_sum += memory;
    out.push_back({milli, limit, memory});
  }
  return out;
}

// A v1.Node as kube-scheduler sends it (encoding/json, compact): about 6 KB
// with GFD labels, the inventory annotation (~1 KB), managedFields and images.
constexpr std::string_view kNodeTemplate = R"json({
 "metadata": {
  "name": "", "uid": "", "resourceVersion": "", "creationTimestamp": "2026-11-02T08:14:31Z",
  "labels": {
   "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "", "kubernetes.io/os": "linux",
   "node.kubernetes.io/instance-type": "p4d.24xlarge",
   "nvidia.com/cuda.driver.major": "535", "nvidia.com/gfd.timestamp": "1762071271",
   "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "8",
   "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.machine": "p4d.24xlarge", "nvidia.com/gpu.memory": "81920",
   "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
   "nvidia.com/gpu.replicas": "1",
   "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
   "topology.kubernetes.io/region": "us-west-2", "topology.kubernetes.io/zone": "us-west-2a"
  },
  "annotations": {
   "csi.volume.kubernetes.io/nodeid": "", "node.alpha.kubernetes.io/ttl": "0",
   "tessera.io/gpu-inventory": "", "volumes.kubernetes.io/controller-managed-attach-detach": "true"
  },
  "managedFields": [
   {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-02T08:14:31Z",
    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {".": {},
     "f:volumes.kubernetes.io/controller-managed-attach-detach": {}}, "f:labels": {".": {},
     "f:kubernetes.io/arch": {}, "f:kubernetes.io/hostname": {}, "f:kubernetes.io/os": {}}}, "f:spec": {"f:providerID": {}}}},
   {"manager": "gpu-feature-discovery", "operation": "Update", "apiVersion": "v1", "time": "2026-11-02T08:16:02Z",
    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:nvidia.com/cuda.driver.major": {},
     "f:nvidia.com/gfd.timestamp": {}, "f:nvidia.com/gpu.compute.major": {},
     "f:nvidia.com/gpu.compute.minor": {}, "f:nvidia.com/gpu.count": {}, "f:nvidia.com/gpu.family": {},
     "f:nvidia.com/gpu.machine": {}, "f:nvidia.com/gpu.memory": {}, "f:nvidia.com/gpu.present": {},
     "f:nvidia.com/gpu.product": {}, "f:nvidia.com/gpu.replicas": {}, "f:nvidia.com/mig.capable": {},
     "f:nvidia.com/mig.strategy": {}}}}},
   {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-21T22:40:12Z",
    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:allocatable": {"f:nvidia.com/gpu": {}},
     "f:capacity": {"f:nvidia.com/gpu": {}}, "f:conditions": {"k:{\"type\":\"DiskPressure\"}": {
     "f:lastHeartbeatTime": {}}, "k:{\"type\":\"MemoryPressure\"}": {"f:lastHeartbeatTime": {}},
     "k:{\"type\":\"PIDPressure\"}": {"f:lastHeartbeatTime": {}}, "k:{\"type\":\"Ready\"}": {
     "f:lastHeartbeatTime": {}}}, "f:images": {}}}, "subresource": "status"}
  ]
 },
 "spec": {"podCIDR": "", "podCIDRs": [""], "providerID": "",
  "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
 "status": {
  "capacity": {"cpu": "96", "ephemeral-storage": "7812500Mi", "memory": "1176553176Ki", "nvidia.com/gpu": "8",
   "pods": "110", "vpc.amazonaws.com/efa": "4"},
  "allocatable": {"cpu": "95690m", "ephemeral-storage": "7372278590346", "memory": "1165140696Ki",
   "nvidia.com/gpu": "8", "pods": "110", "vpc.amazonaws.com/efa": "4"},
  "conditions": [
   {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-11-21T22:40:12Z",
    "lastTransitionTime": "2026-11-02T08:14:31Z", "reason": "KubeletHasSufficientMemory",
    "message": "kubelet has sufficient memory available"},
   {"type": "DiskPressure", "status": "False", "lastHeartbeatTime": "2026-11-21T22:40:12Z",
    "lastTransitionTime": "2026-11-02T08:14:31Z", "reason": "KubeletHasNoDiskPressure",
    "message": "kubelet has no disk pressure"},
   {"type": "PIDPressure", "status": "False", "lastHeartbeatTime": "2026-11-21T22:40:12Z",
    "lastTransitionTime": "2026-11-02T08:14:31Z", "reason": "KubeletHasSufficientPID",
    "message": "kubelet has sufficient PID available"},
   {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-21T22:40:12Z",
    "lastTransitionTime": "2026-11-02T08:15:02Z", "reason": "KubeletReady",
    "message": "kubelet is posting ready status"}
  ],
  "addresses": [{"type": "InternalIP", "address": ""}, {"type": "Hostname", "address": ""}],
  "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
  "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "5.10.223-212.873.amzn2.x86_64",
   "osImage": "Amazon Linux 2", "containerRuntimeVersion": "containerd://1.7.11",
   "kubeletVersion": "v1.26.15-eks-59bf375",
   "kubeProxyVersion": "v1.26.15-eks-59bf375", "operatingSystem": "linux", "architecture": "amd64"},
  "images": [
   {"names": ["nvcr.io/nvidia/pytorch@sha256:7b9e2bd7a1f4c4d1e0f6b7dcd3c61b3b0e4f5c2d8a1e9b6c3d2f1a0b9c8d7e6f5",
     "nvcr.io/nvidia/pytorch:23.10-py3"], "sizeBytes": 9938274011},
   {"names": ["nvcr.io/nvidia/tritonserver@sha256:3c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d",
     "nvcr.io/nvidia/tritonserver:23.10-py3"], "sizeBytes": 6124508377},
   {"names": ["nvcr.io/nvidia/k8s/dcgm-exporter@sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
     "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.0-3.2.0-ubuntu22.04"], "sizeBytes": 1205538312},
   {"names": ["nvcr.io/nvidia/k8s-device-plugin@sha256:1f2e3d4c5b6a79808f7e6d5c4b3a291807f6e5d4c3b2a1908f7e6d5c4b3a2910",
     "nvcr.io/nvidia/k8s-device-plugin:v0.14.3"], "sizeBytes": 131204576}
  ]
 }
})json";

Json NodeObject(const Json& node_template, int64_t node, const std::string& name, const std::string& inventory) {
  Json n = node_template;
  const std::string ip = absl::StrFormat("10.%d.%d.%d", 16 + node / 65536, (node / 256) % 256, node % 256);
  const std::string instance = "i-0" + Hex(Hash(static_cast<uint64_t>(node), 3), 16);
  const std::string cidr = absl::StrFormat("10.%d.%d.0/24", 64 + node / 256, node % 256);
  Json& meta = n["metadata"];
  meta["name"] = name;
  meta["uid"] = FakeUuid(static_cast<uint64_t>(node), 100);
  meta["resourceVersion"] = std::to_string(1000000 + node * 37);
  meta["labels"]["kubernetes.io/hostname"] = name;
  meta["annotations"]["csi.volume.kubernetes.io/nodeid"] = absl::StrFormat("{\"ebs.csi.aws.com\":\"%s\"}", instance);
  if (IsT4(node)) {
    // GFD labels only: no inventory annotation.
    meta["annotations"].erase("tessera.io/gpu-inventory");
    Json& labels = meta["labels"];
    for (const char* key : {"node.kubernetes.io/instance-type", "nvidia.com/gpu.machine"}) {
      labels[key] = "g4dn.metal";
    }
    labels["nvidia.com/gpu.compute.major"] = "7";
    labels["nvidia.com/gpu.compute.minor"] = "5";
    labels["nvidia.com/gpu.family"] = "turing";
    labels["nvidia.com/gpu.memory"] = "15360";
    labels["nvidia.com/gpu.product"] = "Tesla-T4";
    labels["nvidia.com/mig.capable"] = "false";
  } else {
    meta["annotations"]["tessera.io/gpu-inventory"] = inventory;
  }
  Json& spec = n["spec"];
  spec["podCIDR"] = cidr;
  spec["podCIDRs"][0] = cidr;
  spec["providerID"] = "aws:///us-west-2a/" + instance;
  Json& status = n["status"];
  status["addresses"][0]["address"] = ip;
  status["addresses"][1]["address"] = name;
  status["nodeInfo"]["machineID"] =
      Hex(Hash(static_cast<uint64_t>(node), 4), 16) + Hex(Hash(static_cast<uint64_t>(node), 5), 16);
  status["nodeInfo"]["systemUUID"] = FakeUuid(static_cast<uint64_t>(node), 6);
  status["nodeInfo"]["bootID"] = FakeUuid(static_cast<uint64_t>(node), 7);
  return n;
}

// The pending pod, as kube-scheduler sends it.
std::string PodJson(int gpu_count) {
  Json annotations = Json::object();
  if (gpu_count > 1) annotations["tessera.io/gpu-count"] = std::to_string(gpu_count);
  annotations["tessera.io/gpu-fraction"] = "0.25";
  annotations["tessera.io/gpu-fraction-limit"] = "0.5";
  annotations["tessera.io/gpu-memory"] = "10Gi";
  Json pod = {
      {"metadata",
       {{"name", "resnet-serving-7f9c6d5b8-x2kqp"},
        {"generateName", "resnet-serving-7f9c6d5b8-"},
        {"namespace", "ml"},
        {"uid", "7d1e4b2a-2222-4c3d-8e9f-000000000006"},
        {"resourceVersion", "48213377"},
        {"creationTimestamp", "2026-11-21T22:57:01Z"},
        {"labels", {{"app", "resnet-serving"}, {"pod-template-hash", "7f9c6d5b8"}}},
        {"annotations", annotations},
        {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                          {"kind", "ReplicaSet"},
                                          {"name", "resnet-serving-7f9c6d5b8"},
                                          {"uid", "0c5a1f7e-9d2b-4b8e-a6f3-4e2d1c0b9a87"},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})}}},
      {"spec",
       {{"containers",
         Json::array(
             {{{"name", "main"},
               {"image", "registry.example.com/inference:1.0"},
               {"resources", {{"limits", {{"memory", "8Gi"}}}, {"requests", {{"cpu", "2"}, {"memory", "8Gi"}}}}},
               {"terminationMessagePath", "/dev/termination-log"},
               {"terminationMessagePolicy", "File"},
               {"imagePullPolicy", "IfNotPresent"}}})},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"serviceAccountName", "default"},
        {"securityContext", Json::object()},
        {"schedulerName", "tessera-scheduler"},
        {"tolerations", Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                                     {{"key", "node.kubernetes.io/not-ready"},
                                      {"operator", "Exists"},
                                      {"effect", "NoExecute"},
                                      {"tolerationSeconds", 300}},
                                     {{"key", "node.kubernetes.io/unreachable"},
                                      {"operator", "Exists"},
                                      {"effect", "NoExecute"},
                                      {"tolerationSeconds", 300}}})},
        {"priority", 0},
        {"enableServiceLinks", true},
        {"preemptionPolicy", "PreemptLowerPriority"}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "Burstable"}}}};
  return pod.dump();
}

enum class Form { kNames, kFullNodes };

// One cluster of `n` nodes, its service, and the request bodies for it.
struct Fixture {
  int64_t nodes = 0;
  // Mutable for BM_FilterNamesWhileWriterPublishes alone, whose writer
  // changes it; every other case reads `snapshot`, taken once it was built.
  mutable ClusterModel model;
  PluginRegistry registry = NewBuiltinRegistry();
  MetricsRegistry metrics;
  std::shared_ptr<const Profile> profile;
  std::shared_ptr<const ClusterSnapshot> snapshot;
  RecentRefusals refusals;
  // The program as each service sees it (declared before the services, which point to them).
  testing::FunctionHandle handle, handle_without_record, handle_with_pools, handle_live;
  std::unique_ptr<ExtenderService> service;
  std::unique_ptr<ExtenderService> service_live;  // reads model.Current() on every request, as the program does
  std::unique_ptr<ExtenderService> service_without_record;  // for BM_FilterRefusedNames
  // The same profile as a policy with two node pools (even nodes "gpu-training", odd "gpu-inference").
  std::shared_ptr<const ProfileSet> pools;
  std::unique_ptr<ExtenderService> service_with_pools;
  std::string training_names_body;  // names_body[0]'s pod, labelled tessera.io/task-type: training
  bool mig_cluster = false;   // a quarter of the A100s' GPUs in MIG mode, and MI300X boxes
  std::string names_body[2];  // by gpu-count - 1
  std::string mig_names_body; // a pod asking for a 1g.10gb instance
  std::string refused_body;   // a pod no node can take
  std::string full_body[2];
  std::string error;  // set when the fixture could not be built

  [[nodiscard]] const std::string& Body(Form form, int64_t gpu_count) const {
    return form == Form::kNames ? names_body[gpu_count - 1] : full_body[gpu_count - 1];
  }
};

std::unique_ptr<Fixture> BuildFixture(int64_t n, bool mig_cluster) {
  auto f = std::make_unique<Fixture>();
  f->nodes = n;
  f->mig_cluster = mig_cluster;
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyText(mig_cluster ? kMigPolicy : kPolicy, "policy.yaml", f->registry);
  if (!profile.ok()) {
    f->error = std::string(profile.status().message());
    return f;
  }
  f->profile = *profile;

  const Json node_template = Json::parse(kNodeTemplate);
  std::string items, names;
  int64_t pods = 0, busy_gpus = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::string name = NodeName(i, mig_cluster);
    const std::string inventory = IsT4(i) ? std::string() : InventoryAnnotation(i, mig_cluster);
    absl::StatusOr<NodeInventory> inv =
        IsT4(i) ? k8s::ParseNodeInventory({.gfd_count = "8", .gfd_product = "Tesla-T4", .gfd_memory = "15360"})
                : k8s::ParseNodeInventory({.inventory_annotation = inventory});
    if (!inv.ok() || inv->gpus.size() != kGpusPerNode) {
      f->error = absl::StrFormat("node %s: inventory: %s", name, inv.status().ToString());
      return f;
    }
    for (int64_t g = 0; g < kGpusPerNode; ++g) {
      if (InMigMode(mig_cluster, i, g)) {
        // About half the instances held, by hash.
        const std::vector<MigInstance>& instances = inv->gpus[static_cast<size_t>(g)].mig;
        const int64_t pods_before = pods;
        for (size_t k = 0; k < instances.size(); ++k) {
          if (Hash(static_cast<uint64_t>(i), static_cast<uint64_t>(g), k) % 2 == 0) continue;
          const MigProfile* profile = FindMigGeometry("A100-80GB")->Find(instances[k].profile);
          PodHolding pod;
          pod.uid = FakeUuid(static_cast<uint64_t>(i), static_cast<uint64_t>(5000 + g * 16 + static_cast<int64_t>(k)));
          pod.pod_key = absl::StrFormat("ml/mig-%05d-%d-%d", i, g, k);
          pod.assignment.node = name;
          GpuShare s;
          s.index = static_cast<int32_t>(g);
          s.uuid = inv->gpus[static_cast<size_t>(g)].uuid;
          s.guaranteed = s.limit = MigComputeOfName(profile->name);
          s.memory = s.memory_limit = profile->memory;
          s.mig = instances[k];
          pod.assignment.gpus.push_back(std::move(s));
          f->model.UpsertPod(std::move(pod));
          ++pods;
        }
        busy_gpus += pods > pods_before ? 1 : 0;
        continue;
      }
      const std::vector<Share> shares = SharesOn(i, g);
      busy_gpus += shares.empty() ? 0 : 1;
      for (size_t k = 0; k < shares.size(); ++k) {
        PodHolding pod;
        pod.uid = FakeUuid(static_cast<uint64_t>(i), static_cast<uint64_t>(1000 + g * 16 + static_cast<int64_t>(k)));
        pod.pod_key = absl::StrFormat("ml/worker-%05d-%d-%d", i, g, k);
        pod.assignment.node = name;
        GpuShare s;
        s.index = static_cast<int32_t>(g);
        s.uuid = inv->gpus[static_cast<size_t>(g)].uuid;
        s.guaranteed = MilliGpu(shares[k].milli);
        s.limit = MilliGpu(shares[k].limit);
        s.memory = s.memory_limit = MemoryMiB(shares[k].memory_mib);
        pod.assignment.gpus.push_back(std::move(s));
        f->model.UpsertPod(std::move(pod));
        ++pods;
      }
    }
    f->model.UpsertNode(name, *std::move(inv), absl::OkStatus(), std::nullopt,
                        i % 2 == 0 ? "gpu-training" : "gpu-inference");

    if (i > 0) {
      items += ',';
      names += ',';
    }
    items += NodeObject(node_template, i, name, inventory).dump();
    names += Json(name).dump();
  }
  f->snapshot = f->model.Publish();
  for (testing::FunctionHandle* h : {&f->handle, &f->handle_without_record, &f->handle_with_pools}) {
    h->snapshot = [fp = f.get()] { return fp->snapshot; };
    h->profile = [fp = f.get()] { return fp->profile; };
  }
  f->handle.refusal_log = &f->refusals;
  f->handle_live.snapshot = [fp = f.get()] { return fp->model.Current(); };
  f->handle_live.profile = [fp = f.get()] { return fp->profile; };
  f->service_live = std::make_unique<ExtenderService>(f->handle_live, f->metrics);
  f->handle_with_pools.profiles = [fp = f.get()] { return fp->pools; };
  f->service = std::make_unique<ExtenderService>(f->handle, f->metrics);
  f->service_without_record = std::make_unique<ExtenderService>(f->handle_without_record, f->metrics);
  {
    Json pod = Json::parse(PodJson(1));
    pod["metadata"]["annotations"] = {{"tessera.io/gpu-count", "8"}, {"tessera.io/gpu-model", "NVIDIA-B200"}};
    f->refused_body = absl::StrFormat(R"({"Pod":%s,"Nodes":null,"NodeNames":[%s]})", pod.dump(), names);
  }

  f->pools = *ProfileSet::Create(
      f->profile, {PoolPolicy{.name = "gpu-training", .task_types = {"training"}, .exclusive = true, .profile = f->profile},
                   PoolPolicy{.name = "gpu-inference", .task_types = {"inference"}, .exclusive = false,
                              .profile = f->profile}});
  f->service_with_pools = std::make_unique<ExtenderService>(
      f->handle_with_pools, f->metrics);
  {
    Json pod = Json::parse(PodJson(1));
    pod["metadata"]["labels"]["tessera.io/task-type"] = "training";
    f->training_names_body = absl::StrFormat(R"({"Pod":%s,"Nodes":null,"NodeNames":[%s]})", pod.dump(), names);
  }
  {
    Json pod = Json::parse(PodJson(1));
    pod["metadata"]["annotations"] = {{"tessera.io/mig-profile", "1g.10gb"}};
    f->mig_names_body = absl::StrFormat(R"({"Pod":%s,"Nodes":null,"NodeNames":[%s]})", pod.dump(), names);
  }
  for (int count = 1; count <= 2; ++count) {
    const std::string pod = PodJson(count);
    f->names_body[count - 1] = absl::StrFormat(R"({"Pod":%s,"Nodes":null,"NodeNames":[%s]})", pod, names);
    f->full_body[count - 1] =
        absl::StrFormat(R"({"Pod":%s,"Nodes":{"metadata":{},"items":[%s]},"NodeNames":null})", pod, items);
  }
  std::fprintf(stderr,
               "fixture: %lld nodes, %lld GPUs (%lld with pods, %lld pods); names body %zu B, full body %zu B "
               "(%zu B per node)\n",
               static_cast<long long>(n), static_cast<long long>(n * kGpusPerNode), static_cast<long long>(busy_gpus),
               static_cast<long long>(pods), f->names_body[0].size(), f->full_body[0].size(),
               items.size() / static_cast<size_t>(n));
  return f;
}

// Built once per size (and kind of cluster) and kept for the whole run.
const Fixture& GetFixture(int64_t n, bool mig_cluster = false) {
  static std::map<std::pair<int64_t, bool>, std::unique_ptr<Fixture>> cache;
  std::unique_ptr<Fixture>& f = cache[{n, mig_cluster}];
  if (f == nullptr) f = BuildFixture(n, mig_cluster);
  return *f;
}

// The fixture and the decoded request for one benchmark, or nullopt after
// reporting the error.
struct Decoded {
  const Fixture* fixture;
  k8s::ExtenderArgs args;
  PodGpuRequest pod;
};

std::optional<Decoded> Setup(benchmark::State& state, Form form, int64_t gpu_count, simdjson::dom::parser& parser) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return std::nullopt;
  }
  absl::StatusOr<k8s::ExtenderArgs> args = k8s::DecodeExtenderArgs(f.Body(form, gpu_count), parser);
  if (!args.ok()) {
    state.SkipWithError(std::string(args.status().message()).c_str());
    return std::nullopt;
  }
  absl::StatusOr<std::optional<PodGpuRequest>> pod = k8s::ParsePodGpuRequest(args->pod.annotations);
  if (!pod.ok() || !pod->has_value()) {
    state.SkipWithError("the benchmark pod is not a valid Tessera request");
    return std::nullopt;
  }
  return Decoded{&f, *std::move(args), **pod};
}

int64_t GpuCountArg(const benchmark::State& state) { return state.range(1); }

// --- 1. decode ----------------------------------------------------------------

void Decode(benchmark::State& state, Form form) {
  simdjson::dom::parser parser;
  if (!Setup(state, form, 1, parser)) return;  // also sizes the parser
  const std::string& body = GetFixture(state.range(0)).Body(form, 1);
  for (auto _ : state) {
    absl::StatusOr<k8s::ExtenderArgs> args = k8s::DecodeExtenderArgs(body, parser);
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
}

void BM_DecodeNames(benchmark::State& state) { Decode(state, Form::kNames); }
void BM_DecodeFullNodes(benchmark::State& state) { Decode(state, Form::kFullNodes); }

// --- 2. policy ----------------------------------------------------------------

void PolicyFilter(benchmark::State& state, Form form) {
  simdjson::dom::parser parser;
  std::optional<Decoded> d = Setup(state, form, GpuCountArg(state), parser);
  if (!d) return;
  const Profile& profile = *d->fixture->profile;
  int64_t passed = 0, rejected = 0;
  for (auto _ : state) {
    const CandidateNodes candidates(d->args, *d->fixture->snapshot);
    const CycleState cycle(d->pod);
    passed = rejected = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!candidates.known(i)) {
        ++rejected;
        continue;
      }
      FilterVerdict verdict = profile.Filter(cycle, candidates.view(i));
      (verdict.ok() ? passed : rejected)++;
      benchmark::DoNotOptimize(verdict);
    }
  }
  state.counters["passed"] = static_cast<double>(passed);
  state.counters["rejected"] = static_cast<double>(rejected);
}

void PolicyPrioritize(benchmark::State& state, Form form) {
  simdjson::dom::parser parser;
  std::optional<Decoded> d = Setup(state, form, GpuCountArg(state), parser);
  if (!d) return;
  const Profile& profile = *d->fixture->profile;
  for (auto _ : state) {
    const CandidateNodes candidates(d->args, *d->fixture->snapshot);
    std::vector<int64_t> scores = profile.Score(CycleState(d->pod), candidates.views(), nullptr);
    benchmark::DoNotOptimize(scores);
  }
}

void BM_PolicyFilterNames(benchmark::State& state) { PolicyFilter(state, Form::kNames); }
void BM_PolicyFilterFullNodes(benchmark::State& state) { PolicyFilter(state, Form::kFullNodes); }
void BM_PolicyPrioritizeNames(benchmark::State& state) { PolicyPrioritize(state, Form::kNames); }
void BM_PolicyPrioritizeFullNodes(benchmark::State& state) { PolicyPrioritize(state, Form::kFullNodes); }

// --- 3. encode ----------------------------------------------------------------

void EncodeFilter(benchmark::State& state, Form form) {
  simdjson::dom::parser parser;
  std::optional<Decoded> d = Setup(state, form, 1, parser);
  if (!d) return;
  k8s::FilterResult result;
  const size_t n = form == Form::kNames ? d->args.node_names->size() : d->args.nodes->size();
  result.passed.resize(n);
  for (size_t i = 0; i < n; ++i) result.passed[i] = static_cast<uint32_t>(i);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = k8s::EncodeFilterResult(d->args, result);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_EncodeFilterNames(benchmark::State& state) { EncodeFilter(state, Form::kNames); }
void BM_EncodeFilterFullNodes(benchmark::State& state) { EncodeFilter(state, Form::kFullNodes); }

void BM_EncodePrioritize(benchmark::State& state) {
  simdjson::dom::parser parser;
  std::optional<Decoded> d = Setup(state, Form::kNames, 1, parser);
  if (!d) return;
  const std::vector<std::string_view>& hosts = *d->args.node_names;
  std::vector<int64_t> scores(hosts.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<int64_t>(i % 11);
  for (auto _ : state) {
    std::string out = k8s::EncodeHostPriorityList(hosts, scores, d->args.node_names_plain);
    benchmark::DoNotOptimize(out);
  }
}

// --- 4. end to end: what kube-scheduler waits on ---------------------------------

enum class Verb { kFilter, kPrioritize };

void EndToEnd(benchmark::State& state, Verb verb, Form form) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const std::string& body = f.Body(form, GpuCountArg(state));
  auto call = [&] { return verb == Verb::kFilter ? f.service->Filter(body) : f.service->Prioritize(body); };
  // Once outside the timing: checks the answer and sizes the thread's parser.
  absl::StatusOr<std::string> first = call();
  if (!first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> out = call();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
  state.counters["resp_KiB"] = static_cast<double>(first->size()) / 1024.0;
}

void BM_FilterNames(benchmark::State& state) { EndToEnd(state, Verb::kFilter, Form::kNames); }
void BM_FilterFullNodes(benchmark::State& state) { EndToEnd(state, Verb::kFilter, Form::kFullNodes); }
void BM_PrioritizeNames(benchmark::State& state) { EndToEnd(state, Verb::kPrioritize, Form::kNames); }
void BM_PrioritizeFullNodes(benchmark::State& state) { EndToEnd(state, Verb::kPrioritize, Form::kFullNodes); }

// --- 4b. a mixed fleet: a quarter of the A100s' GPUs in MIG mode, MI300X boxes ----
//
// Arg "pod": 0 asks for a quarter GPU (as BM_FilterNames/1), 1 for a 1g.10gb
// MIG instance. #23's bar: with MIG GPUs in the cluster, filter and
// prioritize stay within 20% of BM_FilterNames and BM_PrioritizeNames.

void MigCluster(benchmark::State& state, Verb verb) {
  const Fixture& f = GetFixture(state.range(0), /*mig_cluster=*/true);
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const std::string& body = state.range(1) == 1 ? f.mig_names_body : f.names_body[0];
  auto call = [&] { return verb == Verb::kFilter ? f.service->Filter(body) : f.service->Prioritize(body); };
  absl::StatusOr<std::string> first = call();
  if (!first.ok() || first->find("gpu-a100") == std::string::npos) {
    state.SkipWithError("the pod fits on no A100 node of the MIG cluster");
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> out = call();
    benchmark::DoNotOptimize(out);
  }
}

void BM_FilterNamesMigQuarter(benchmark::State& state) { MigCluster(state, Verb::kFilter); }
void BM_PrioritizeNamesMigQuarter(benchmark::State& state) { MigCluster(state, Verb::kPrioritize); }

// --- 4c. pools by task type ---------------------------------------------------------
//
// BM_FilterNames/1's pod, labelled training, under a policy whose training
// pool (half the nodes, exclusive) has the same plugins: what routing adds
// (a pool per node, half the nodes refused with a reason, prioritize over
// the pool's half). Arg "pools": 0 the same request under the policy without pools.

void PoolRouted(benchmark::State& state, Verb verb) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const ExtenderService& service = state.range(1) == 1 ? *f.service_with_pools : *f.service;
  auto call = [&] {
    return verb == Verb::kFilter ? service.Filter(f.training_names_body) : service.Prioritize(f.training_names_body);
  };
  absl::StatusOr<std::string> first = call();
  if (!first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> out = call();
    benchmark::DoNotOptimize(out);
  }
  state.counters["resp_KiB"] = static_cast<double>(first->size()) / 1024.0;
}

void BM_FilterNamesTaskTypePools(benchmark::State& state) { PoolRouted(state, Verb::kFilter); }
void BM_PrioritizeNamesTaskTypePools(benchmark::State& state) { PoolRouted(state, Verb::kPrioritize); }

// --- 5. a pod that fits nowhere, and the GPU map -----------------------------------

void BM_FilterRefusedNames(benchmark::State& state) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const ExtenderService& service = state.range(1) == 1 ? *f.service : *f.service_without_record;
  absl::StatusOr<std::string> first = service.Filter(f.refused_body);
  if (!first.ok() || first->find("\"NodeNames\":[]") == std::string::npos) {
    state.SkipWithError("the refused pod was not refused everywhere");
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::string> out = service.Filter(f.refused_body);
    benchmark::DoNotOptimize(out);
  }
}

void BM_GpuMapPage(benchmark::State& state) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  static RecentRefusals* const refused = [] {
    auto* r = new RecentRefusals();
    for (int i = 0; i < 1000; ++i) {
      FilterRefusal one{.key = absl::StrFormat("pending-%04d", i), .pod = absl::StrFormat("ml/pending-%04d", i),
                        .tenant_label = "research", .request = "8 GPUs", .nodes = 5000};
      one.reasons = {{.code = "insufficient_gpu", .nodes = 5000, .example = "3 of the 8 GPUs ...", .node = "n"}};
      r->Record(std::move(one));
    }
    return r;
  }();
  const GpuMapQuery query = ParseGpuMapQuery(state.range(1) == 1 ? "/ui?q=worker-00042&page=1" : "/ui?page=2");
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string page = RenderGpuMapPage(
        {.snapshot = f.snapshot.get(), .refusals = refused->List(), .source = "benchmark"}, query);
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  state.counters["page_KiB"] = static_cast<double>(bytes) / 1024.0;
}

// --- 6. filter while a writer publishes -------------------------------------------

// Changes the model `per_second` times a second and publishes after each, as
// the watch does: a pod of 10 milli comes to the next node, or leaves the one
// it came to, and once a second a node joins or leaves (a publish that lays
// the whole node set out again). Stops and undoes its changes when destroyed.
class ChurningWriter {
 public:
  ChurningWriter(ClusterModel& model, int64_t nodes, int64_t per_second) : model_(model), nodes_(nodes) {
    if (per_second <= 0) return;
    thread_ = std::thread([this, per_second] {
      const auto period = std::chrono::nanoseconds(1'000'000'000 / per_second);
      auto next = std::chrono::steady_clock::now();
      for (int64_t tick = 0; !stop_.load(std::memory_order_relaxed); ++tick) {
        Change(tick, per_second);
        model_.Publish();
        publishes_.fetch_add(1, std::memory_order_relaxed);
        next += period;
        std::this_thread::sleep_until(next);  // a rate, not a wait for something
      }
    });
  }
  ~ChurningWriter() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
    for (const std::string& uid : placed_) model_.RemovePod(uid);
    if (spare_up_) model_.RemoveNode(kSpare);
    model_.Publish();
  }
  ChurningWriter(const ChurningWriter&) = delete;
  ChurningWriter& operator=(const ChurningWriter&) = delete;

  [[nodiscard]] int64_t publishes() const { return publishes_.load(); }

 private:
  static constexpr const char* kSpare = "gpu-spare-node";

  void Change(int64_t tick, int64_t per_second) {
    if (tick % per_second == per_second - 1) {  // once a second: the node set changes
      if (spare_up_) {
        model_.RemoveNode(kSpare);
      } else {
        NodeInventory inventory;
        GpuDevice gpu;
        gpu.uuid = "GPU-spare-0";
        gpu.model = "NVIDIA-A100-SXM4-80GB";
        gpu.memory = MemoryMiB(81920);
        inventory.gpus.push_back(std::move(gpu));
        model_.UpsertNode(kSpare, std::move(inventory), absl::OkStatus());
      }
      spare_up_ = !spare_up_;
      return;
    }
    // Pods come to nodes 0, 1, 2, ... and leave them in the same order, 64 behind.
    if (placed_.size() >= 64) {
      model_.RemovePod(placed_.front());
      placed_.erase(placed_.begin());
      return;
    }
    const int64_t node = next_node_++ % nodes_;
    PodHolding pod;
    pod.uid = absl::StrFormat("churn-%d", tick);
    pod.pod_key = absl::StrFormat("ml/churn-%d", tick);
    pod.assignment.node = NodeName(node);
    GpuShare share;
    share.index = 0;
    share.guaranteed = share.limit = MilliGpu(10);
    pod.assignment.gpus.push_back(share);
    placed_.push_back(pod.uid);
    model_.UpsertPod(std::move(pod));
  }

  ClusterModel& model_;
  const int64_t nodes_;
  std::vector<std::string> placed_;  // the writer thread's alone, until it is joined
  int64_t next_node_ = 0;
  bool spare_up_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> publishes_{0};
  std::thread thread_;
};

// Names-only filter of a quarter-GPU pod, each request taking the model's
// current snapshot, while ChurningWriter publishes `changes` times a second.
// Reports each call's latency percentiles (the writer's effect shows in the
// tail, not in the mean). Real time: the writer runs on the other core.
void BM_FilterNamesWhileWriterPublishes(benchmark::State& state) {
  const Fixture& f = GetFixture(state.range(0));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const std::string& body = f.Body(Form::kNames, 1);
  if (absl::StatusOr<std::string> first = f.service_live->Filter(body); !first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  std::vector<int64_t> nanos;
  nanos.reserve(1 << 16);
  int64_t publishes = 0;
  {
    ChurningWriter writer(f.model, f.nodes, state.range(1));
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::string> out = f.service_live->Filter(body);
      benchmark::DoNotOptimize(out);
      nanos.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
                          .count());
    }
    publishes = writer.publishes();
  }
  std::sort(nanos.begin(), nanos.end());
  const auto at = [&](double q) {
    return static_cast<double>(nanos[std::min(nanos.size() - 1, static_cast<size_t>(q * static_cast<double>(nanos.size())))]) / 1e3;
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
  state.counters["p999_us"] = at(0.999);
  state.counters["max_us"] = at(1.0);
  state.counters["publishes"] = static_cast<double>(publishes);
}

// --- registration ---------------------------------------------------------------

void Sizes(benchmark::internal::Benchmark* b) { b->ArgName("nodes")->Arg(100)->Arg(1000)->Arg(5000); }

// The mixed fleet's pods: 0 a quarter GPU, 1 a 1g.10gb MIG instance.
void SizesAndPods(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "pod"})->ArgsProduct({{100, 1000, 5000}, {0, 1}});
}

void SizesAndGpus(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "gpus"});
  for (int64_t gpus : {1, 2}) {
    for (int64_t nodes : {100, 1000, 5000}) b->Args({nodes, gpus});
  }
}

BENCHMARK(BM_DecodeNames)->Apply(Sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeFullNodes)->Apply(Sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PolicyFilterNames)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyFilterFullNodes)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyPrioritizeNames)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PolicyPrioritizeFullNodes)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeFilterNames)->Apply(Sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeFilterFullNodes)->Apply(Sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodePrioritize)->Apply(Sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterNames)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterFullNodes)->Apply(SizesAndGpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FilterNamesTaskTypePools)
    ->ArgNames({"nodes", "pools"})
    ->ArgsProduct({{1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeNamesTaskTypePools)
    ->ArgNames({"nodes", "pools"})
    ->ArgsProduct({{1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeNames)->Apply(SizesAndGpus)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeFullNodes)->Apply(SizesAndGpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FilterNamesMigQuarter)->Apply(SizesAndPods)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeNamesMigQuarter)->Apply(SizesAndPods)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterRefusedNames)
    ->ArgNames({"nodes", "record"})
    ->ArgsProduct({{100, 1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterNamesWhileWriterPublishes)
    ->ArgNames({"nodes", "changes_per_s"})
    ->ArgsProduct({{1000, 5000}, {0, 50}})
    ->MinTime(3)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuMapPage)
    ->ArgNames({"nodes", "query"})
    ->ArgsProduct({{100, 1000, 5000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
