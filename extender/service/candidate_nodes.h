// Joins the nodes a request names with the cluster snapshot.
#pragma once

#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "k8s/extender_args.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/node_view.h"

namespace tessera {

/// One NodeView per node of the request, in request order.
///
/// With NodeNames (nodeCacheCapable=true), a node the snapshot knows is its
/// view there, by address: nothing is copied per node. The snapshot must
/// outlive this object. `known(i)` says whether it knew the node; one it
/// does not is a view of the name alone.
///
/// Full Node objects (nodeCacheCapable=false) bring their own inventory,
/// which is parsed here; what pods hold always comes from the snapshot, by
/// node name. The request's args must outlive this object too.
class CandidateNodes {
 public:
  CandidateNodes(const k8s::ExtenderArgs& args, const ClusterSnapshot& snapshot);
  CandidateNodes(const CandidateNodes&) = delete;
  CandidateNodes& operator=(const CandidateNodes&) = delete;

  [[nodiscard]] size_t size() const { return views_.size(); }
  [[nodiscard]] absl::Span<const NodeView* const> views() const { return views_; }
  [[nodiscard]] const NodeView& view(size_t i) const { return *views_[i]; }
  [[nodiscard]] bool known(size_t i) const { return known_[i]; }
  /// The node pool of node `i` (k8s/annotations.h kNodePoolLabels): from
  /// the request's Node object when it sent one, else from the snapshot;
  /// empty when the node has none or is unknown.
  [[nodiscard]] std::string_view pool(size_t i) const;
  /// Asks the CPU to load what pool(i) reads: a node's state is a cache
  /// miss of its own, which a loop over thousands of nodes would stall on.
  void PrefetchPool(size_t i) const {
    if (wire_nodes_ == nullptr && known_[i]) __builtin_prefetch(&snapshot_->node(snapshot_index_[i]).pool);
  }

 private:
  void JoinNames(const std::vector<std::string_view>& names, const ClusterSnapshot& snapshot);
  void JoinNodes(const std::vector<k8s::WireNode>& nodes, const ClusterSnapshot& snapshot);

  std::vector<const NodeView*> views_;
  std::vector<bool> known_;
  // Where pool(i) looks: the request's Node objects, or the snapshot's node
  // at snapshot_index_[i] (names; valid where known_[i]).
  const std::vector<k8s::WireNode>* wire_nodes_ = nullptr;
  const ClusterSnapshot* snapshot_ = nullptr;
  std::vector<NodeIndex> snapshot_index_;
  // The views this object builds (full Node objects, unknown names), sized
  // once so that views_ may point into them; with the parsed inventories
  // and GPU states they point into in turn.
  std::vector<NodeView> own_views_;
  std::vector<NodeInventory> inventories_;
  std::vector<absl::Status> inventory_errors_;
  std::vector<std::vector<GpuState>> gpu_states_;  // each inventory joined with the snapshot's usage
};

}  // namespace tessera
