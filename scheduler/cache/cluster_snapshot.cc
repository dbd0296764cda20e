#include "scheduler/cache/cluster_snapshot.h"

#include "scheduler/model/absl_compat.h"

namespace tessera {

std::optional<NodeIndex> ClusterSnapshot::FindNode(std::string_view name) const {
  if (index_ == nullptr) return std::nullopt;
  auto it = index_->find(Absl(name));
  if (it == index_->end()) return std::nullopt;
  return it->second;
}

void ClusterSnapshot::PrefetchNode(std::string_view name) const {
  if (index_ != nullptr) index_->prefetch(Absl(name));
}

}  // namespace tessera
