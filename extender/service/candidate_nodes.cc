#include "extender/service/candidate_nodes.h"

#include <algorithm>
#include <array>

namespace tessera {

CandidateNodes::CandidateNodes(const k8s::ExtenderArgs& args, const ClusterSnapshot& snapshot)
    : snapshot_(&snapshot) {
  if (args.nodes) {
    wire_nodes_ = &*args.nodes;
    JoinNodes(*args.nodes, snapshot);
  } else {
    JoinNames(*args.node_names, snapshot);
  }
}

std::string_view CandidateNodes::pool(size_t i) const {
  if (wire_nodes_ != nullptr) return (*wire_nodes_)[i].pool.value_or(std::string_view());
  return known_[i] ? std::string_view(snapshot_->node(snapshot_index_[i]).pool) : std::string_view();
}

void CandidateNodes::JoinNames(const std::vector<std::string_view>& names, const ClusterSnapshot& snapshot) {
  views_.resize(names.size());
  known_.assign(names.size(), false);
  snapshot_index_.resize(names.size());
  size_t unknown = 0;
  // Each name hashed once; the slot of the name kLookAhead places on is
  // loaded meanwhile: the lookups' cache misses overlap.
  constexpr size_t kLookAhead = 8;
  const NodeNameIndex& index = snapshot.node_names();
  std::array<uint64_t, kLookAhead> hashes{};
  for (size_t i = 0; i < std::min(kLookAhead, names.size()); ++i) {
    hashes[i] = NodeNameIndex::Hash(names[i]);
    index.Prefetch(hashes[i]);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const uint64_t hash = hashes[i % kLookAhead];
    if (i + kLookAhead < names.size()) {
      hashes[i % kLookAhead] = NodeNameIndex::Hash(names[i + kLookAhead]);
      index.Prefetch(hashes[i % kLookAhead]);
    }
    if (std::optional<uint32_t> found = index.Find(names[i], hash)) {
      views_[i] = &snapshot.View(*found);
      known_[i] = true;
      snapshot_index_[i] = *found;
    } else {
      ++unknown;
    }
  }
  if (unknown == 0) return;
  own_views_.reserve(unknown);
  for (size_t i = 0; i < names.size(); ++i) {
    if (known_[i]) continue;
    views_[i] = &own_views_.emplace_back(NodeView{.name = names[i], .gpus = {}, .inventory_error = nullptr, .usage = {}});
  }
}

void CandidateNodes::JoinNodes(const std::vector<k8s::WireNode>& nodes, const ClusterSnapshot& snapshot) {
  views_.resize(nodes.size());
  known_.assign(nodes.size(), true);
  own_views_.resize(nodes.size());
  inventories_.resize(nodes.size());
  inventory_errors_.resize(nodes.size());
  gpu_states_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::optional<NodeIndex> known = snapshot.FindNode(nodes[i].name);
    // The snapshot's parse of the same node lends its GPU topology when the
    // annotation is unchanged: no per-request parse, one shared object.
    const NodeInventory* previous = known ? &snapshot.node(*known).inventory : nullptr;
    absl::StatusOr<NodeInventory> inv = k8s::ParseNodeInventory(nodes[i].inventory, previous);
    if (inv.ok()) {
      inventories_[i] = std::move(*inv);
    } else {
      inventory_errors_[i] = inv.status();
    }
    NodeView& v = own_views_[i];
    v.name = nodes[i].name;
    v.gpus = inventories_[i].gpus;
    v.inventory_error = inventory_errors_[i].ok() ? nullptr : &inventory_errors_[i];
    v.topology = inventories_[i].topology.get();
    v.topology_error = inventories_[i].topology_error.ok() ? nullptr : &inventories_[i].topology_error;
    v.version = 0;  // the GPUs are the request's, not the snapshot node's: answers on it are not kept
    if (known) {
      const NodeView& cached = snapshot.View(*known);
      v.usage = cached.usage;
      v.telemetry = cached.telemetry;
      v.bindings = cached.bindings;
      v.host = cached.host;  // allocatable from the watch, like what pods hold
      v.gpus_withheld = cached.gpus_withheld;  // a pod there holds GPUs the model cannot count
    }
    gpu_states_[i] = JoinGpuStates(v.gpus, v.usage);
    v.gpu_states = gpu_states_[i];
    views_[i] = &v;
  }
}

}  // namespace tessera
