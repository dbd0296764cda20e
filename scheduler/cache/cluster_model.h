// The writer side of the cluster model: nodes and the pods that hold GPUs.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/cache/cluster_snapshot.h"

namespace tessera {

/// Mutable model; thread-safe. Changes become visible to readers only at
/// Publish(), which returns the new snapshot (Current() returns it too).
///
/// A pod's holding is keyed by uid, so a repeated update never counts twice.
/// A pod may name a node the model does not know yet (full-Node requests
/// carry inventories the model never saw); its usage is kept under that name.
class ClusterModel {
 public:
  ClusterModel();

  /// Adds or replaces a node's inventory. `inventory_error` not OK means the
  /// node's inventory source was unparsable (the node then has no GPUs).
  void UpsertNode(std::string name, NodeInventory inventory, absl::Status inventory_error);
  void RemoveNode(std::string_view name);

  /// Adds or replaces what a pod holds (by uid).
  void UpsertPod(PodHolding pod);
  void RemovePod(std::string_view uid);

  /// Publishes every change since the last publish as a new snapshot.
  std::shared_ptr<const ClusterSnapshot> Publish();
  /// The last published snapshot (never null; empty before the first publish).
  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Current() const;

 private:
  struct NodeEntry {
    bool known = false;  // has an inventory (not just pods naming it)
    NodeInventory inventory;
    absl::Status inventory_error;
    absl::btree_map<std::string, PodHolding> pods;  // by uid
  };

  void MarkDirty(const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::shared_ptr<const NodeState> Build(const std::string& name, const NodeEntry& e);

  mutable absl::Mutex mu_;
  absl::btree_map<std::string, NodeEntry> nodes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> node_of_pod_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  bool node_set_changed_ ABSL_GUARDED_BY(mu_) = true;
  std::shared_ptr<const ClusterSnapshot> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
