// One-line builders for nodes, GPUs and pods in tests:
//   Node("n1").Gpus(8, "NVIDIA-A100-SXM4-80GB", 81920).Hold(0, 250, 10240)   what plugins see (View()),
//   Node("n1").Gpus(8).Host(96000).PodShape(1, false)                         host CPU known too
//   Inventory(8) / Inventory(4, "M", 16384)   a node's GPUs, as the cluster model takes them
//   Devices(2, "G2", 0)                        the same GPUs as a list
//   Pod().Fraction(250).Limit(800).Memory(10240).Count(2)   a pod's request (Cpu(): host CPU too)
//   Holding("uid", "n1", 0, 250)               a bound pod for the cluster model; also on several
//   Holding("uid", "n1", {0, 1}, 500, 2048)    GPUs alike, or with shares of their own:
//   Holding("uid", "n1", {Share(0, 250).Limit(500).Memory(1024), Share(1, 1000)})
//   Node("n1").Gpus(2).Mig(0, MigInstances("1g.10gb", {0, 1})).HoldMig(0, 1)   GPU 0 in MIG mode, one instance held
//   Pod().MigProfile("1g.10gb")                 a pod asking for a MIG instance
//   WorkloadOf({"3 cpu=1000m gpu=500m", "1 cpu=8 gpu=1"})   a target workload from its items
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_request.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/host_resources.h"
#include "scheduler/model/target_workload.h"

namespace tessera::testing {

inline constexpr int64_t kA100Mib = 81920;
inline constexpr const char* kA100 = "NVIDIA-A100-SXM4-80GB";
inline constexpr const char* kT4 = "NVIDIA-T4";

/// `n` GPUs indexed 0..n-1, of one model and memory size (0: unknown), on
/// NUMA node 0, with uuids `uuid_prefix` + index ("GPU-0", "GPU-1", …).
inline std::vector<GpuDevice> Devices(int n, std::string model = kA100, int64_t memory_mib = kA100Mib,
                                      std::string uuid_prefix = "GPU-") {
  std::vector<GpuDevice> gpus;
  gpus.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    gpus.push_back(GpuDevice{.index = i, .uuid = uuid_prefix + std::to_string(i), .model = model,
                             .memory = MemoryMiB(memory_mib), .numa = 0});
  }
  return gpus;
}

/// A node's inventory as the watch hands it to ClusterModel::UpsertNode:
/// Devices(n, model, memory_mib), read from Tessera's annotation.
///   model.UpsertNode("n1", Inventory(8), absl::OkStatus());
inline NodeInventory Inventory(int n, std::string model = kA100, int64_t memory_mib = kA100Mib) {
  NodeInventory inventory;
  inventory.gpus = Devices(n, std::move(model), memory_mib);
  inventory.source = InventorySource::kAnnotation;
  return inventory;
}

/// MIG instances of one profile at the given starts, with uuids
/// "MIG-<profile>-<start>": MigInstances("1g.10gb", {0, 1, 2}).
inline std::vector<MigInstance> MigInstances(const std::string& profile, std::vector<int32_t> starts) {
  std::vector<MigInstance> out;
  for (int32_t s : starts) out.push_back({.profile = profile, .start = s, .uuid = "MIG-" + profile + "-" + std::to_string(s)});
  return out;
}

/// A node with GPUs and what pods hold on them; View() is what plugins see.
class Node {
 public:
  explicit Node(std::string name) : name_(std::move(name)) {}

  /// Adds `n` GPUs (next indices) of one model and memory size.
  Node& Gpus(int n, std::string model = kA100, int64_t memory_mib = kA100Mib) {
    for (int i = 0; i < n; ++i) {
      const int32_t index = static_cast<int32_t>(inventory_.gpus.size());
      inventory_.gpus.push_back(GpuDevice{.index = index, .uuid = "GPU-" + name_ + "-" + std::to_string(index),
                                          .model = model, .memory = MemoryMiB(memory_mib), .numa = 0});
    }
    inventory_.source = InventorySource::kAnnotation;
    return *this;
  }
  /// A pod holds `milli` (burst `limit_milli`, default = milli) and `mib` on GPU `index`.
  Node& Hold(int32_t index, int64_t milli, int64_t mib = 0, int64_t limit_milli = -1) {
    if (usage_.size() <= static_cast<size_t>(index)) usage_.resize(static_cast<size_t>(index) + 1);
    GpuShare share;
    share.index = index;
    share.guaranteed = MilliGpu(milli);
    share.limit = MilliGpu(limit_milli < 0 ? milli : limit_milli);
    share.memory = share.memory_limit = MemoryMiB(mib);
    usage_[static_cast<size_t>(index)].Add(share);
    return *this;
  }
  /// A pod holds the MIG instance that starts at slice `start` of GPU `index`.
  Node& HoldMig(int32_t index, int32_t start) {
    if (usage_.size() <= static_cast<size_t>(index)) usage_.resize(static_cast<size_t>(index) + 1);
    GpuShare share;
    share.index = index;
    share.mig = MigInstance{.profile = "held", .start = start, .uuid = ""};
    usage_[static_cast<size_t>(index)].Add(share);
    return *this;
  }
  /// The GPUs from index `from` on are `vendor`'s.
  Node& Vendor(GpuVendor vendor, int32_t from = 0) {
    for (GpuDevice& g : inventory_.gpus) {
      if (g.index >= from) g.vendor = vendor;
    }
    return *this;
  }
  /// GPU `index` is in MIG mode and the inventory does not list its
  /// instances (the node agent's `"migEnabled": true`).
  Node& MigUnlisted(int32_t index) {
    Mig(index);
    for (GpuDevice& g : inventory_.gpus) g.mig_unlisted = g.mig_unlisted || g.index == index;
    return *this;
  }
  /// The node's agent found GPU `index` broken.
  Node& Unhealthy(int32_t index) {
    for (GpuDevice& g : inventory_.gpus) {
      if (g.index == index) g.healthy = false;
    }
    return *this;
  }
  /// GPU `index` is in MIG mode, split into `instances` (none by default).
  Node& Mig(int32_t index, std::vector<MigInstance> instances = {}) {
    for (GpuDevice& g : inventory_.gpus) {
      if (g.index != index) continue;
      g.mig_mode = true;
      g.mig = instances;
    }
    return *this;
  }
  /// The node's inventory could not be parsed.
  Node& Broken(std::string why) {
    error_ = absl::InvalidArgumentError(std::move(why));
    return *this;
  }

  /// How the GPUs are linked (test/testing/topologies.h parses the references).
  Node& Topology(std::shared_ptr<const GpuTopology> topology) {
    inventory_.topology = std::move(topology);
    return *this;
  }
  /// The node's topology annotation could not be used.
  Node& TopologyError(std::string why) {
    inventory_.topology = nullptr;
    inventory_.topology_error = absl::InvalidArgumentError(std::move(why));
    return *this;
  }

  /// The node's host as the watch reports it: `cpu_capacity` milli-CPU of
  /// which `cpu_free` are free, and `memory_mib` of memory, none used. Without
  /// it (or after UnknownHost) the host is unknown, as for a node whose
  /// allocatable the watch has not seen.
  Node& Host(int64_t cpu_free, int64_t cpu_capacity = 96000, int64_t memory_mib = 384 * 1024) {
    host_ = HostResources{.cpu_capacity = MilliCpu(cpu_capacity), .cpu_used = MilliCpu(cpu_capacity - cpu_free),
                          .memory_capacity = MemoryMiB(memory_mib), .memory_used = MemoryMiB(0)};
    return *this;
  }
  Node& UnknownHost() {
    host_.reset();
    return *this;
  }
  /// One more pod of `gpus` GPUs, whole or shared (half a GPU each), in the
  /// node's pod shapes (NodeView::pod_shapes; what Hold holds is not counted).
  Node& PodShape(int32_t gpus, bool whole) {
    const GpuShare share{.index = 0, .uuid = {}, .guaranteed = MilliGpu(whole ? 1000 : 500), .limit = MilliGpu(0),
                         .memory = MemoryMiB(0), .memory_limit = MemoryMiB(0)};
    CountPodShape(std::vector<GpuShare>(static_cast<size_t>(gpus), share), pod_shapes_);
    return *this;
  }

  [[nodiscard]] NodeView View() const {
    const std::vector<GpuState> states = JoinGpuStates(inventory_.gpus, usage_);
    gpu_states_.assign(states.begin(), states.end());  // in place: earlier views stay valid
    NodeView view{.name = name_, .gpus = inventory_.gpus, .inventory_error = error_.ok() ? nullptr : &error_,
                  .usage = usage_, .gpu_states = gpu_states_};
    view.topology = inventory_.topology.get();
    view.topology_error = inventory_.topology_error.ok() ? nullptr : &inventory_.topology_error;
    view.host = host_ ? &*host_ : nullptr;
    view.pod_shapes = pod_shapes_;
    return view;
  }
  [[nodiscard]] const NodeInventory& inventory() const { return inventory_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string name_;
  NodeInventory inventory_;
  absl::Status error_;
  std::vector<GpuUsage> usage_;
  std::optional<HostResources> host_;
  std::vector<GpuPodShape> pod_shapes_;
  mutable std::vector<GpuState> gpu_states_;  // what the last View() points at
};

/// A pod's GPU request; defaults to one whole GPU.
class Pod {
 public:
  Pod& Count(int32_t n) { r_.count = n; return *this; }
  Pod& Fraction(int64_t milli) {
    r_.whole_gpu = false;
    r_.guaranteed = r_.limit = MilliGpu(milli);
    return *this;
  }
  Pod& Limit(int64_t milli) { r_.limit = MilliGpu(milli); return *this; }
  Pod& Memory(int64_t mib) {
    r_.memory = MemoryMiB(mib);
    if (r_.memory_limit < r_.memory) r_.memory_limit = r_.memory;
    return *this;
  }
  Pod& MemoryLimit(int64_t mib) { r_.memory_limit = MemoryMiB(mib); return *this; }
  Pod& Models(std::vector<std::string> m) { r_.models = std::move(m); return *this; }
  Pod& Vendors(std::vector<GpuVendor> v) { r_.vendors = std::move(v); return *this; }
  Pod& ExcludeModels(std::vector<std::string> m) { r_.excluded_models = std::move(m); return *this; }
  /// The pod's host CPU request (milli-CPU) and memory (MiB); Count(0) for a pod without GPUs.
  /// A MIG instance of `profile` ("1g.10gb") instead of shares.
  Pod& MigProfile(std::string profile) {
    r_.guaranteed = r_.limit = MigComputeOfName(profile);
    r_.memory = r_.memory_limit = MigMemoryOfName(profile);
    r_.mig_profile = std::move(profile);
    r_.count = 1;
    r_.whole_gpu = true;
    return *this;
  }
  Pod& Cpu(int64_t milli) { r_.host.cpu = MilliCpu(milli); return *this; }
  Pod& HostMemory(int64_t mib) { r_.host.memory = MemoryMiB(mib); return *this; }

  operator const PodGpuRequest&() const { return r_; }  // NOLINT: builders convert implicitly
  [[nodiscard]] const PodGpuRequest& request() const { return r_; }

 private:
  PodGpuRequest r_;
};

/// What `chooser` ranks on `node` for the pod of `cycle` (GpuChooserPlugin::RankGpus).
inline RankedGpus Ranked(const GpuChooserPlugin& chooser, const CycleState& cycle, const NodeView& node) {
  RankedGpus ranked;
  chooser.RankGpus(cycle, node, ranked);
  return ranked;
}

/// Pointers to `views`, as Profile::Score and ScoreMemo::Score take them.
inline std::vector<const NodeView*> Pointers(const std::vector<NodeView>& views) {
  std::vector<const NodeView*> out;
  out.reserve(views.size());
  for (const NodeView& v : views) out.push_back(&v);
  return out;
}

/// One pod's share of GPU `gpu`: `milli` guaranteed and `mib` reserved, each
/// its own limit unless Limit / MemoryLimit say more.
class Share {
 public:
  Share(int32_t gpu, int64_t milli, int64_t mib = 0) {
    s_.index = gpu;
    s_.guaranteed = s_.limit = MilliGpu(milli);
    s_.memory = s_.memory_limit = MemoryMiB(mib);
  }
  Share& Limit(int64_t milli) { s_.limit = MilliGpu(milli); return *this; }
  Share& Memory(int64_t mib) {
    s_.memory = MemoryMiB(mib);
    if (s_.memory_limit < s_.memory) s_.memory_limit = s_.memory;
    return *this;
  }
  Share& MemoryLimit(int64_t mib) { s_.memory_limit = MemoryMiB(mib); return *this; }
  Share& Uuid(std::string uuid) { s_.uuid = std::move(uuid); return *this; }
  /// The share is the MIG instance of `profile` at slice `start`.
  Share& Mig(std::string profile, int32_t start, std::string uuid = "") {
    s_.mig = MigInstance{.profile = std::move(profile), .start = start, .uuid = std::move(uuid)};
    return *this;
  }

  operator GpuShare() const { return s_; }  // NOLINT: builders convert implicitly

 private:
  GpuShare s_;
};

/// A bound pod `uid` (key "ns/<uid>") on `node` holding `shares`.
inline PodHolding Holding(std::string uid, std::string node, std::vector<GpuShare> shares) {
  PodHolding p;
  p.pod_key = "ns/" + uid;
  p.uid = std::move(uid);
  p.assignment.node = std::move(node);
  p.assignment.gpus = std::move(shares);
  return p;
}

/// A bound pod `uid` holding `milli` (guaranteed and limit) and `mib` (reserved
/// and limit) of each of `gpus` of `node`.
inline PodHolding Holding(std::string uid, std::string node, const std::vector<int32_t>& gpus, int64_t milli,
                          int64_t mib = 0) {
  std::vector<GpuShare> shares;
  for (int32_t gpu : gpus) shares.push_back(Share(gpu, milli, mib));
  return Holding(std::move(uid), std::move(node), std::move(shares));
}

/// A bound pod `uid` holding `milli` (guaranteed and limit, no memory) of GPU `gpu` of `node`.
inline PodHolding Holding(std::string uid, std::string node, int32_t gpu, int64_t milli) {
  return Holding(std::move(uid), std::move(node), {Share(gpu, milli)});
}

/// `pod`, asking its node's host for `cpu_milli` milli-CPU and `memory_mib`
/// of memory (what the model counts as the host's use).
///   Requesting(Holding("p", "n1", {}), 2000)   a running CPU-only pod
inline PodHolding Requesting(PodHolding pod, int64_t cpu_milli, int64_t memory_mib = 0) {
  pod.host = HostRequest{.cpu = MilliCpu(cpu_milli), .memory = MemoryMiB(memory_mib)};
  return pod;
}

/// `pod`, bound to its node at `at` (what load-aware's estimate of recent pods reads).
inline PodHolding BoundAt(PodHolding pod, absl::Time at) {
  pod.bound_at = at;
  return pod;
}

/// A target workload from its items, as a policy file lists them; a bad item
/// or workload fails the test that builds it.
inline TargetWorkload WorkloadOf(const std::vector<std::string>& items) {
  std::vector<WorkloadPod> pods;
  for (const std::string& item : items) {
    absl::StatusOr<WorkloadPod> pod = ParseWorkloadPod(item);
    EXPECT_TRUE(pod.ok()) << item << ": " << pod.status();
    if (pod.ok()) pods.push_back(*pod);
  }
  absl::StatusOr<TargetWorkload> workload = TargetWorkload::Create(std::move(pods));
  EXPECT_TRUE(workload.ok()) << workload.status();
  return *std::move(workload);
}

}  // namespace tessera::testing
