// Applies Nodes from the API server to the cluster model.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "k8s/client/reflector.h"
#include "k8s/sync/gpu_capacity.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

/// A node's GPU inventory comes from its annotation, GPU Feature Discovery
/// labels or allocatable (see node_inventory.h). A node whose inventory is
/// unreadable stays in the model with the error (it gets no GPUs, and filter
/// says why); that is the node's problem, not a malformed event. Its host
/// CPU and memory capacity is status.allocatable (node_allocatable.h);
/// unknown when absent or unreadable.
class NodeSink final : public ReflectorSink {
 public:
  /// Called with a node's `tessera.io/gpu-utilization` annotation (nullopt
  /// when it has none, or the node is gone), for the load-aware telemetry.
  using UtilizationObserver = std::function<void(const std::string& node, std::optional<std::string_view>)>;

  /// Called with what a node should advertise as GPU extended resources and
  /// what it does (nullopt when the node is gone), for the capacity publisher.
  using CapacityObserver = std::function<void(const std::string& node, std::optional<NodeGpuCapacity>)>;

  /// \param metrics may be null.
  NodeSink(ClusterModel& model, MetricsRegistry* metrics);
  /// Must be set before the watch starts.
  void set_utilization_observer(UtilizationObserver observer) { utilization_observer_ = std::move(observer); }
  /// Must be set before the watch starts.
  void set_capacity_observer(CapacityObserver observer) { capacity_observer_ = std::move(observer); }

  void BeginList() override;
  absl::Status Upsert(simdjson::dom::element object) override;
  absl::Status Delete(simdjson::dom::element object) override;
  void EndList() override;
  void Flush() override;

 private:
  void Forget(const std::string& name);
  ClusterModel& model_;
  MetricsRegistry* metrics_;
  UtilizationObserver utilization_observer_;
  CapacityObserver capacity_observer_;
  absl::flat_hash_set<std::string> known_;   // nodes in the model
  absl::flat_hash_set<std::string> listed_;  // nodes seen by the list in progress
  bool listing_ = false;
  bool dirty_ = false;
};

}  // namespace tessera::k8s
