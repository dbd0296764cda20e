// The simulator's cluster: every node's GPUs, what pods hold on them and
// the host resources, as one dense array of the NodeViews plugins read.
//
// The extender's ClusterModel publishes an immutable snapshot per change,
// for concurrent readers. A replay has one reader and one writer taking
// turns, ten thousand times a run, so it keeps the views in place instead
// and updates only the node a pod lands on; each node carries a version
// that changes with it, which the replay's per-node memo keys on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu_request.h"
#include "sim/trace.h"

namespace tessera::sim {

class Cluster {
 public:
  /// Nodes in the order given (the trace's name order); GPUs are indexed
  /// 0..n-1 and carry the node's model and vendor (and, when the node lists
  /// MIG instances, are in MIG mode with them); host resources are the node's.
  explicit Cluster(const std::vector<TraceNode>& nodes);
  Cluster(const Cluster& other);
  Cluster& operator=(const Cluster&) = delete;

  [[nodiscard]] size_t size() const { return nodes_.size(); }
  [[nodiscard]] const NodeView& View(size_t node) const { return views_[node]; }
  [[nodiscard]] absl::Span<const NodeView> views() const { return views_; }
  /// Changes every time the node does; starts at 1.
  [[nodiscard]] uint32_t version(size_t node) const { return nodes_[node].version; }
  /// Σ GPUs × 1000 (a GPU in MIG mode counts 1000 too).
  [[nodiscard]] int64_t capacity_milli() const { return capacity_milli_; }
  /// Σ guaranteed milli-GPU held, over all GPUs (a MIG instance: its
  /// compute sevenths, GpuShare::guaranteed).
  [[nodiscard]] int64_t used_milli() const { return used_milli_; }

  /// Records that a pod asking `request` now holds `shares` on `node` (a
  /// share's MIG instance is marked held: GpuUsage::mig_held_starts).
  void Place(size_t node, const PodGpuRequest& request, const std::vector<GpuShare>& shares);
  /// Undoes a Place with the same arguments: the pod left or was evicted
  /// (its MIG instance is free again).
  void Remove(size_t node, const PodGpuRequest& request, const std::vector<GpuShare>& shares);

 private:
  struct Node {
    std::string name;
    std::vector<GpuDevice> gpus;
    std::vector<GpuUsage> usage;
    std::vector<GpuState> gpu_states;  // gpus joined with usage, rebuilt by Refresh
    HostResources host;
    std::vector<GpuPodShape> pod_shapes;
    uint32_t version = 1;
  };
  void Refresh(size_t node);  // re-points views_[node] into nodes_[node]

  std::vector<Node> nodes_;
  std::vector<NodeView> views_;
  int64_t capacity_milli_ = 0;
  int64_t used_milli_ = 0;
};

}  // namespace tessera::sim
