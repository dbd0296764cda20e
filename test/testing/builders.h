// One-line builders for nodes, GPUs and pods in tests:
//   Node("n1").Gpus(8, "NVIDIA-A100-SXM4-80GB", 81920).Hold(0, 250, 10240)
//   Pod().Fraction(250).Limit(800).Memory(10240).Count(2)
//   Holding("uid", "n1", 0, 250)   a bound pod for the cluster model
#pragma once

#include <string>
#include <vector>

#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_request.h"

namespace tessera::testing {

inline constexpr int64_t kA100Mib = 81920;
inline constexpr const char* kA100 = "NVIDIA-A100-SXM4-80GB";
inline constexpr const char* kT4 = "NVIDIA-T4";

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
  /// The node's agent found GPU `index` broken.
  Node& Unhealthy(int32_t index) {
    for (GpuDevice& g : inventory_.gpus) {
      if (g.index == index) g.healthy = false;
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

  [[nodiscard]] NodeView View() const {
    const std::vector<GpuState> states = JoinGpuStates(inventory_.gpus, usage_);
    gpu_states_.assign(states.begin(), states.end());  // in place: earlier views stay valid
    NodeView view{.name = name_, .gpus = inventory_.gpus, .inventory_error = error_.ok() ? nullptr : &error_,
                  .usage = usage_, .gpu_states = gpu_states_};
    view.topology = inventory_.topology.get();
    view.topology_error = inventory_.topology_error.ok() ? nullptr : &inventory_.topology_error;
    return view;
  }
  [[nodiscard]] const NodeInventory& inventory() const { return inventory_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string name_;
  NodeInventory inventory_;
  absl::Status error_;
  std::vector<GpuUsage> usage_;
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
  Pod& ExcludeModels(std::vector<std::string> m) { r_.excluded_models = std::move(m); return *this; }

  operator const PodGpuRequest&() const { return r_; }  // NOLINT: builders convert implicitly
  [[nodiscard]] const PodGpuRequest& request() const { return r_; }

 private:
  PodGpuRequest r_;
};

/// What `chooser` ranks on `node` for the pod of `cycle` (Plugin::RankGpus).
inline RankedGpus Ranked(const Plugin& chooser, const CycleState& cycle, const NodeView& node) {
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

/// A bound pod `uid` holding `milli` (guaranteed and limit, no memory) of GPU `gpu` of `node`.
inline PodHolding Holding(std::string uid, std::string node, int32_t gpu, int64_t milli) {
  PodHolding p;
  p.uid = uid;
  p.pod_key = "ns/" + uid;
  p.assignment.node = std::move(node);
  GpuShare s;
  s.index = gpu;
  s.guaranteed = s.limit = MilliGpu(milli);
  p.assignment.gpus.push_back(s);
  return p;
}

}  // namespace tessera::testing
