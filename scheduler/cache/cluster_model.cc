#include "scheduler/cache/cluster_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

ClusterModel::ClusterModel() : current_(std::make_shared<const ClusterSnapshot>()) {}

void ClusterModel::MarkDirty(const std::string& node) { dirty_.insert(node); }

void ClusterModel::UpsertNode(std::string name, NodeInventory inventory, absl::Status inventory_error) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = nodes_.try_emplace(name);
  if (inserted) node_set_changed_ = true;
  NodeEntry& e = it->second;
  e.known = true;
  e.inventory = std::move(inventory);
  e.inventory_error = std::move(inventory_error);
  MarkDirty(name);
}

void ClusterModel::RemoveNode(std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(Absl(name));
  if (it == nodes_.end()) return;
  it->second.known = false;
  it->second.inventory = {};
  it->second.inventory_error = absl::OkStatus();
  // Pods bound there still hold their GPUs until they are removed themselves.
  if (it->second.pods.empty()) nodes_.erase(it);
  node_set_changed_ = true;
  MarkDirty(std::string(name));
}

void ClusterModel::UpsertPod(PodHolding pod) {
  absl::MutexLock lock(&mu_);
  const std::string uid = pod.uid;
  const std::string node = pod.assignment.node;
  if (auto old = node_of_pod_.find(uid); old != node_of_pod_.end() && old->second != node) {
    auto n = nodes_.find(old->second);
    if (n != nodes_.end()) {
      n->second.pods.erase(uid);
      if (!n->second.known && n->second.pods.empty()) { nodes_.erase(n); node_set_changed_ = true; }
    }
    MarkDirty(old->second);
  }
  auto [it, inserted] = nodes_.try_emplace(node);
  if (inserted) node_set_changed_ = true;
  it->second.pods.insert_or_assign(uid, std::move(pod));
  node_of_pod_[uid] = node;
  MarkDirty(node);
}

void ClusterModel::RemovePod(std::string_view uid) {
  absl::MutexLock lock(&mu_);
  auto old = node_of_pod_.find(Absl(uid));
  if (old == node_of_pod_.end()) return;
  const std::string node = old->second;
  node_of_pod_.erase(old);
  auto n = nodes_.find(node);
  if (n != nodes_.end()) {
    n->second.pods.erase(Absl(uid));
    if (!n->second.known && n->second.pods.empty()) { nodes_.erase(n); node_set_changed_ = true; }
  }
  MarkDirty(node);
}

std::shared_ptr<const NodeState> ClusterModel::Build(const std::string& name, const NodeEntry& e) {
  auto s = std::make_shared<NodeState>();
  s->name = name;
  s->inventory_error = e.inventory_error;
  if (e.inventory_error.ok()) s->inventory = e.inventory;
  int32_t max_index = -1;
  for (const GpuDevice& g : s->inventory.gpus) max_index = std::max(max_index, g.index);
  for (const auto& [uid, pod] : e.pods) {
    for (const GpuShare& share : pod.assignment.gpus) max_index = std::max(max_index, share.index);
  }
  s->usage.resize(static_cast<size_t>(max_index + 1));
  for (const auto& [uid, pod] : e.pods) {
    s->pods.push_back(pod);
    for (const GpuShare& share : pod.assignment.gpus) {
      if (share.index < 0) continue;
      s->usage[static_cast<size_t>(share.index)].Add(share);
      const bool device_known = std::any_of(s->inventory.gpus.begin(), s->inventory.gpus.end(),
                                            [&](const GpuDevice& g) { return g.index == share.index; });
      if (e.known && !device_known) {
        s->problems.push_back(absl::StrCat("pod ", pod.pod_key, " holds GPU ", share.index,
                                           " which the node's inventory does not list"));
      }
    }
  }
  for (const GpuDevice& g : s->inventory.gpus) {
    const GpuUsage& u = s->usage[static_cast<size_t>(g.index)];
    if (u.guaranteed > kOneGpu) {
      s->problems.push_back(absl::StrCat("GPU ", g.index, " is overcommitted: pods hold ", u.guaranteed.value(),
                                         "/1000 milli guaranteed"));
    }
    if (g.memory_known() && u.memory > g.memory) {
      s->problems.push_back(absl::StrCat("GPU ", g.index, " is overcommitted: pods hold ", u.memory.value(), " of ",
                                         g.memory.value(), " MiB"));
    }
  }
  return s;
}

std::shared_ptr<const ClusterSnapshot> ClusterModel::Publish() {
  absl::MutexLock lock(&mu_);
  auto next = std::make_shared<ClusterSnapshot>();
  next->generation_ = current_->generation_ + 1;
  next->nodes_.reserve(nodes_.size());
  next->views_.reserve(nodes_.size());
  const ClusterSnapshot& prev = *current_;
  for (const auto& [name, entry] : nodes_) {
    std::shared_ptr<const NodeState> state;
    if (!dirty_.contains(name)) {
      if (auto i = prev.FindNode(name)) state = prev.nodes_[*i];
    }
    if (state == nullptr) state = Build(name, entry);
    next->gpu_count_ += state->inventory.gpus.size();
    if (!state->inventory_error.ok()) ++next->inventory_errors_;
    next->views_.push_back(NodeView{.name = state->name,
                                    .gpus = state->inventory.gpus,
                                    .inventory_error = state->inventory_error.ok() ? nullptr : &state->inventory_error,
                                    .usage = state->usage});
    next->nodes_.push_back(std::move(state));
  }
  if (node_set_changed_ || prev.index_ == nullptr) {
    auto index = std::make_shared<absl::flat_hash_map<std::string, NodeIndex>>();
    index->reserve(next->nodes_.size());
    for (NodeIndex i = 0; i < next->nodes_.size(); ++i) index->emplace(next->nodes_[i]->name, i);
    next->index_ = std::move(index);
  } else {
    next->index_ = prev.index_;  // same names in the same order
  }
  dirty_.clear();
  node_set_changed_ = false;
  current_ = std::move(next);
  return current_;
}

std::shared_ptr<const ClusterSnapshot> ClusterModel::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

}  // namespace tessera
