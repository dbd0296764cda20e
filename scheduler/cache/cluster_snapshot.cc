#include "scheduler/cache/cluster_snapshot.h"

#include "scheduler/model/absl_compat.h"

namespace tessera {

std::optional<NodeIndex> ClusterSnapshot::FindNode(std::string_view name) const {
  if (index_ == nullptr) return std::nullopt;
  return index_->Find(name);
}

const NodeNameIndex& ClusterSnapshot::node_names() const {
  static const NodeNameIndex kEmpty;
  return index_ != nullptr ? *index_ : kEmpty;
}

}  // namespace tessera
