#include "k8s/sync/node_sink.h"

#include "absl/strings/str_cat.h"
#include "k8s/extender_args.h"
#include "k8s/gpu_utilization.h"
#include "k8s/node_allocatable.h"
#include "k8s/node_inventory.h"
#include "scheduler/common/log.h"

namespace tessera::k8s {

NodeSink::NodeSink(ClusterModel& model, MetricsRegistry* metrics) : model_(model), metrics_(metrics) {}

void NodeSink::BeginList() {
  listing_ = true;
  listed_.clear();
}

absl::Status NodeSink::Upsert(simdjson::dom::element object) {
  absl::StatusOr<WireNode> node = DecodeNodeObject(object, "Node");
  if (!node.ok()) return node.status();
  if (node->name.empty()) return absl::InvalidArgumentError("Node.metadata.name is missing");
  std::string name(node->name);
  // Unreadable allocatable leaves the host unknown: plugins then neither
  // check nor weigh it, as before the watch read it.
  absl::StatusOr<std::optional<HostResources>> allocatable =
      ParseNodeAllocatable(node->allocatable_cpu, node->allocatable_memory);
  if (!allocatable.ok()) {
    LogWarning(absl::StrCat("node ", name, ": ", allocatable.status().message()));
    allocatable = std::optional<HostResources>();
  }
  absl::StatusOr<NodeInventory> inventory = ParseNodeInventory(node->inventory);
  if (capacity_observer_) {
    // An unreadable inventory leaves what the node advertises alone: a typo
    // in an annotation must not take its GPUs away from kube-scheduler.
    capacity_observer_(name, NodeGpuCapacity{.wanted = inventory.ok() ? std::optional(WantedCapacity(*inventory))
                                                                      : std::nullopt,
                                             .advertised = AdvertisedCapacity(object)});
  }
  if (!inventory.ok()) {
    LogWarning(absl::StrCat("node ", name, ": ", inventory.status().message()));
    if (metrics_ != nullptr) {
      metrics_->Counter("tessera_node_inventory_errors_total", "Node updates whose GPU inventory was unreadable.").Inc();
    }
    model_.UpsertNode(name, NodeInventory{}, inventory.status(), *allocatable, std::string(node->pool.value_or("")));
  } else {
    model_.UpsertNode(name, std::move(*inventory), absl::OkStatus(), *allocatable,
                      std::string(node->pool.value_or("")));
  }
  if (utilization_observer_) {
    std::optional<std::string_view> utilization;
    std::string_view value;
    if (object["metadata"]["annotations"][kGpuUtilization].get(value) == simdjson::SUCCESS) utilization = value;
    utilization_observer_(name, utilization);
  }
  if (listing_) listed_.insert(name);
  known_.insert(std::move(name));
  dirty_ = true;
  return absl::OkStatus();
}

absl::Status NodeSink::Delete(simdjson::dom::element object) {
  absl::StatusOr<WireNode> node = DecodeNodeObject(object, "Node");
  if (!node.ok()) return node.status();
  const std::string name(node->name);
  model_.RemoveNode(name);
  Forget(name);
  known_.erase(name);
  dirty_ = true;
  return absl::OkStatus();
}

void NodeSink::EndList() {
  // Nodes deleted while no watch was running.
  for (auto it = known_.begin(); it != known_.end();) {
    if (!listed_.contains(*it)) {
      model_.RemoveNode(*it);
      Forget(*it);
      known_.erase(it++);
      dirty_ = true;
    } else {
      ++it;
    }
  }
  listing_ = false;
  listed_.clear();
}

void NodeSink::Forget(const std::string& name) {
  if (utilization_observer_) utilization_observer_(name, std::nullopt);
  if (capacity_observer_) capacity_observer_(name, std::nullopt);
}

void NodeSink::Flush() {
  if (!dirty_) return;
  model_.Publish();
  dirty_ = false;
}

}  // namespace tessera::k8s
