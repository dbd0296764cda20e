// Joins the nodes a request names with the cluster snapshot.
#pragma once

#include <deque>
#include <vector>

#include "k8s/extender_args.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/node_view.h"

namespace tessera {

/// One NodeView per node of the request, in request order.
///
/// Full Node objects (nodeCacheCapable=false) bring their own inventory, which
/// is parsed here; what pods hold always comes from the snapshot, by node name.
/// With NodeNames the snapshot must know the node; `known[i]` says if it did.
class CandidateNodes {
 public:
  CandidateNodes(const k8s::ExtenderArgs& args, const ClusterSnapshot& snapshot);
  CandidateNodes(const CandidateNodes&) = delete;
  CandidateNodes& operator=(const CandidateNodes&) = delete;

  [[nodiscard]] const std::vector<NodeView>& views() const { return views_; }
  [[nodiscard]] bool known(size_t i) const { return known_[i]; }

 private:
  std::vector<NodeView> views_;
  std::vector<bool> known_;
  // Inventories parsed from the request's Node objects. Stable addresses:
  // views_ point into them.
  std::vector<NodeInventory> inventories_;
  std::vector<absl::Status> inventory_errors_;
  std::vector<std::vector<GpuState>> gpu_states_;  // each inventory joined with the snapshot's usage
};

}  // namespace tessera
