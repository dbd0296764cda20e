#include "scheduler/cache/cluster_model.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera {

ClusterModel::ClusterModel() : current_(std::make_shared<const ClusterSnapshot>()) {}

void ClusterModel::MarkDirty(const std::string& node) { dirty_.insert(node); }

void ClusterModel::UpsertNode(std::string name, NodeInventory inventory, absl::Status inventory_error,
                              std::optional<HostResources> allocatable, std::string pool) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = nodes_.try_emplace(name);
  if (inserted) node_set_changed_ = true;
  NodeEntry& e = it->second;
  inventory.topology = InternTopology(std::move(inventory.topology));
  if (allocatable.has_value()) {  // capacity only: the model counts what is used
    allocatable->cpu_used = MilliCpu(0);
    allocatable->memory_used = MemoryMiB(0);
  }
  // Most Node updates change nothing Tessera reads (status heartbeats,
  // conditions, labels of no interest): the node keeps its state and its
  // version, and the score memo its answers for it.
  if (e.known && e.inventory == inventory && e.inventory_error == inventory_error && e.allocatable == allocatable &&
      e.pool == pool) {
    return;
  }
  e.known = true;
  e.inventory = std::move(inventory);
  e.inventory_error = std::move(inventory_error);
  e.allocatable = allocatable;
  e.pool = std::move(pool);
  MarkDirty(name);
}

std::shared_ptr<const GpuTopology> ClusterModel::InternTopology(std::shared_ptr<const GpuTopology> topology) {
  if (topology == nullptr || topology->source().empty()) return topology;
  auto [it, inserted] = topologies_.try_emplace(topology->source());
  if (!inserted) {
    if (std::shared_ptr<const GpuTopology> known = it->second.lock()) {
      // The same text on GPUs of another generation has other bandwidths.
      return known->bandwidths() == topology->bandwidths() ? known : topology;
    }
  }
  it->second = topology;
  // Now and then forget the texts no node uses any more (amortised O(1)).
  if (topologies_.size() > 2 * topologies_after_sweep_ + 16) {
    for (auto t = topologies_.begin(); t != topologies_.end();) {
      if (t->second.expired()) {
        topologies_.erase(t++);
      } else {
        ++t;
      }
    }
    topologies_after_sweep_ = topologies_.size();
  }
  return topology;
}

void ClusterModel::RemoveNode(std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(Absl(name));
  if (it == nodes_.end()) return;
  it->second.known = false;
  it->second.inventory = {};
  it->second.inventory_error = absl::OkStatus();
  it->second.allocatable.reset();
  it->second.pool.clear();
  // Pods bound there still hold their GPUs until they are removed themselves.
  EraseIfEmpty(it);
  node_set_changed_ = true;
  MarkDirty(std::string(name));
}

void ClusterModel::EraseIfEmpty(absl::btree_map<std::string, NodeEntry>::iterator it) {
  if (it->second.known || !it->second.pods.empty() || !it->second.reserved.empty() || it->second.host_pods > 0) return;
  nodes_.erase(it);
  node_set_changed_ = true;
}

void ClusterModel::DropReservation(std::string_view uid) {
  auto r = reservations_.find(Absl(uid));
  if (r == reservations_.end()) return;
  const std::string node = std::move(r->second.node);
  reservations_.erase(r);
  if (auto n = nodes_.find(node); n != nodes_.end()) {
    n->second.reserved.erase(Absl(uid));
    EraseIfEmpty(n);
  }
  MarkDirty(node);
}

PodHolding* ClusterModel::ReservedHolding(std::string_view uid) {
  auto r = reservations_.find(Absl(uid));
  if (r == reservations_.end()) return nullptr;
  auto n = nodes_.find(r->second.node);
  if (n == nodes_.end()) return nullptr;
  auto p = n->second.reserved.find(Absl(uid));
  return p == n->second.reserved.end() ? nullptr : &p->second;
}

void ClusterModel::CountHost(const std::string& uid, const std::string& node, HostRequest request) {
  auto [it, inserted] = host_of_pod_.try_emplace(uid);
  if (!inserted) {
    // Most updates of a running pod change neither: rebuild nothing.
    if (it->second.node == node && it->second.request == request) return;
    UncountHost(uid);
    it = host_of_pod_.try_emplace(uid).first;
  }
  it->second = PodHost{node, request};
  auto [n, created] = nodes_.try_emplace(node);
  if (created) node_set_changed_ = true;
  NodeEntry& e = n->second;
  e.host_used.cpu += request.cpu;
  e.host_used.memory += request.memory;
  ++e.host_pods;
  MarkDirty(node);
}

void ClusterModel::UncountHost(std::string_view uid) {
  auto it = host_of_pod_.find(Absl(uid));
  if (it == host_of_pod_.end()) return;
  const PodHost counted = std::move(it->second);
  host_of_pod_.erase(it);
  auto n = nodes_.find(counted.node);
  if (n == nodes_.end()) return;
  NodeEntry& e = n->second;
  e.host_used.cpu -= counted.request.cpu;
  e.host_used.memory -= counted.request.memory;
  --e.host_pods;
  EraseIfEmpty(n);
  MarkDirty(counted.node);
}

void ClusterModel::UncountGpus(std::string_view uid) {
  auto old = node_of_pod_.find(Absl(uid));
  if (old == node_of_pod_.end()) return;
  const std::string node = std::move(old->second);
  node_of_pod_.erase(old);
  auto n = nodes_.find(node);
  if (n != nodes_.end()) {
    n->second.pods.erase(Absl(uid));
    EraseIfEmpty(n);
  }
  MarkDirty(node);
}

void ClusterModel::UpsertPod(PodHolding pod) {
  absl::MutexLock lock(&mu_);
  const std::string uid = pod.uid;
  const std::string node = pod.assignment.node;
  CountHost(uid, node, pod.host);
  // The pod as the API server records it supersedes a bind in flight for it:
  // its host request now, its GPUs once it shows them (or none were reserved).
  bool reservation_counts_gpus = false;
  if (PodHolding* reserved = ReservedHolding(uid)) {
    if (!pod.assignment.gpus.empty() || reserved->assignment.gpus.empty()) {
      DropReservation(uid);
    } else {
      reservation_counts_gpus = true;  // and knows them, readable or not on the pod
      if (reserved->host != HostRequest{}) {
        reserved->host = HostRequest{};
        MarkDirty(reserved->assignment.node);
      }
    }
  }
  if (pod.assignment.gpus.empty() && (pod.unknown_holding.empty() || reservation_counts_gpus)) {
    UncountGpus(uid);  // holds no GPU (any more), or none but those its reservation counts
    return;
  }
  pod.in_flight = false;
  if (auto old = node_of_pod_.find(uid); old != node_of_pod_.end() && old->second != node) {
    auto n = nodes_.find(old->second);
    if (n != nodes_.end()) {
      n->second.pods.erase(uid);
      EraseIfEmpty(n);
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
  UncountGpus(uid);
  UncountHost(uid);
}

absl::Status ClusterModel::CheckCapacity(const PodHolding& pod) const {
  const std::string& node = pod.assignment.node;
  auto n = nodes_.find(node);
  if (n != nodes_.end() && !pod.assignment.gpus.empty()) {
    for (const auto& [uid, other] : n->second.pods) {
      if (uid == pod.uid || other.unknown_holding.empty()) continue;
      return absl::FailedPreconditionError(absl::StrCat("node ", node, " holds pod ", other.pod_key,
                                                        " whose GPUs Tessera cannot count (", other.unknown_holding,
                                                        ")"));
    }
  }
  for (const GpuShare& share : pod.assignment.gpus) {
    if (share.index < 0) {
      return absl::FailedPreconditionError(absl::StrCat("node ", node, " has no GPU ", share.index));
    }
    GpuUsage total;
    for (const GpuShare& own : pod.assignment.gpus) {
      if (own.index == share.index) total.Add(own);
    }
    const GpuDevice* device = nullptr;
    bool instance_held = false;  // the MIG instance `share` names is another pod's
    if (n != nodes_.end()) {
      const NodeEntry& e = n->second;
      for (const auto* holdings : {&e.pods, &e.reserved}) {
        for (const auto& [uid, other] : *holdings) {
          if (uid == pod.uid) continue;  // replaced by this reservation
          for (const GpuShare& s : other.assignment.gpus) {
            if (s.index != share.index) continue;
            total.Add(s);
            instance_held |= share.mig.has_value() && s.mig.has_value() && s.mig->start == share.mig->start;
          }
        }
      }
      for (const GpuDevice& g : e.inventory.gpus) {
        if (g.index == share.index) device = &g;
      }
      if (e.known && e.inventory_error.ok() && device == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("node ", node, " has no GPU ", share.index, " in its inventory"));
      }
    }
    if (device != nullptr && device->mig_mode != share.mig.has_value()) {
      return absl::FailedPreconditionError(
          device->mig_mode ? absl::StrCat("GPU ", share.index, " of node ", node,
                                          " is in MIG mode: it holds MIG instances, not shares")
                           : absl::StrCat("GPU ", share.index, " of node ", node,
                                          " is not in MIG mode: it has no MIG instance to hold"));
    }
    if (share.mig.has_value()) {
      // An instance has one holder: the start slice names it on its GPU.
      if (instance_held) {
        return absl::ResourceExhaustedError(absl::StrCat("the MIG instance at slice ", share.mig->start, " of GPU ",
                                                         share.index, " of node ", node, " is held by another pod"));
      }
      continue;  // its compute and memory are the instance's, inside the GPU's
    }
    if (total.guaranteed > kOneGpu) {
      return absl::ResourceExhaustedError(absl::StrCat("GPU ", share.index, " of node ", node, " would hold ",
                                                       total.guaranteed.value(), "/1000 milli guaranteed"));
    }
    if (device != nullptr && device->memory_known() && total.memory > device->memory) {
      return absl::ResourceExhaustedError(absl::StrCat("GPU ", share.index, " of node ", node, " would hold ",
                                                       total.memory.value(), " of its ", device->memory.value(),
                                                       " MiB"));
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterModel::Reserve(PodHolding pod, absl::Time expires_at) {
  absl::MutexLock lock(&mu_);
  if (absl::Status fits = CheckCapacity(pod); !fits.ok()) return fits;
  DropReservation(pod.uid);
  pod.in_flight = true;
  if (host_of_pod_.contains(pod.uid)) pod.host = HostRequest{};  // the watch counts it already
  std::string uid = pod.uid;
  std::string node = pod.assignment.node;
  auto [it, inserted] = nodes_.try_emplace(node);
  if (inserted) node_set_changed_ = true;
  it->second.reserved.insert_or_assign(uid, std::move(pod));
  MarkDirty(node);
  reservations_.insert_or_assign(std::move(uid), Reservation{std::move(node), expires_at});
  return absl::OkStatus();
}

bool ClusterModel::ExtendReservation(std::string_view uid, absl::Time expires_at) {
  absl::MutexLock lock(&mu_);
  auto r = reservations_.find(Absl(uid));
  if (r == reservations_.end()) return false;
  r->second.expires_at = expires_at;
  return true;
}

bool ClusterModel::ReleaseReservation(std::string_view uid) {
  absl::MutexLock lock(&mu_);
  if (!reservations_.contains(Absl(uid))) return false;
  DropReservation(uid);
  return true;
}

std::vector<PodHolding> ClusterModel::ExpireReservations(absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> expired;
  for (const auto& [uid, r] : reservations_) {
    if (r.expires_at < now) expired.push_back(uid);
  }
  std::vector<PodHolding> out;
  for (const std::string& uid : expired) {
    const std::string& node = reservations_.at(uid).node;
    if (auto n = nodes_.find(node); n != nodes_.end()) {
      if (auto p = n->second.reserved.find(uid); p != n->second.reserved.end()) out.push_back(p->second);
    }
    DropReservation(uid);
  }
  return out;
}

std::optional<PodHolding> ClusterModel::FindReservation(std::string_view uid) const {
  absl::MutexLock lock(&mu_);
  auto r = reservations_.find(Absl(uid));
  if (r == reservations_.end()) return std::nullopt;
  auto n = nodes_.find(r->second.node);
  if (n == nodes_.end()) return std::nullopt;
  auto p = n->second.reserved.find(Absl(uid));
  if (p == n->second.reserved.end()) return std::nullopt;
  return p->second;
}

std::optional<PodHolding> ClusterModel::FindPod(std::string_view uid) const {
  absl::MutexLock lock(&mu_);
  auto where = node_of_pod_.find(Absl(uid));
  if (where == node_of_pod_.end()) return std::nullopt;
  auto n = nodes_.find(where->second);
  if (n == nodes_.end()) return std::nullopt;
  auto p = n->second.pods.find(Absl(uid));
  if (p == n->second.pods.end()) return std::nullopt;
  return p->second;
}

size_t ClusterModel::reservation_count() const {
  absl::MutexLock lock(&mu_);
  return reservations_.size();
}

// Node versions, process-wide so that no two states ever share one, even
// from two models. Starts at 1: 0 means "no version".
namespace {
std::atomic<uint64_t> next_node_version{1};
}  // namespace

namespace {

// Host CPU and memory: allocatable, less what bound pods and binds in flight request.
using HoldingsByUid = absl::btree_map<std::string, PodHolding>;

HostResources HostOf(const HostResources& allocatable, HostRequest confirmed, const HoldingsByUid& reserved) {
  HostResources host = allocatable;
  host.cpu_used = confirmed.cpu;
  host.memory_used = confirmed.memory;
  for (const auto& [uid, pod] : reserved) {
    host.cpu_used += pod.host.cpu;
    host.memory_used += pod.host.memory;
  }
  return host;
}

// Confirmed holdings and binds in flight, alike, in uid order. A uid is in at
// most one of the two maps (UpsertPod drops the reservation it confirms).
std::vector<const PodHolding*> HoldersOf(const HoldingsByUid& confirmed, const HoldingsByUid& reserved) {
  std::vector<const PodHolding*> holders;
  holders.reserve(confirmed.size() + reserved.size());
  for (const auto& [uid, pod] : confirmed) holders.push_back(&pod);
  for (const auto& [uid, pod] : reserved) {
    if (!pod.assignment.gpus.empty()) holders.push_back(&pod);  // a CPU-only bind holds no GPU
  }
  std::sort(holders.begin(), holders.end(), [](const PodHolding* a, const PodHolding* b) { return a->uid < b->uid; });
  return holders;
}

// Adds every holder's shares to the node's per-GPU usage, pods and shapes;
// `known`: the node's inventory is known, so a GPU it does not list is a problem.
void AddHoldings(const std::vector<const PodHolding*>& holders, bool known, NodeState& s) {
  int32_t max_index = -1;
  for (const GpuDevice& g : s.inventory.gpus) max_index = std::max(max_index, g.index);
  for (const PodHolding* pod : holders) {
    for (const GpuShare& share : pod->assignment.gpus) max_index = std::max(max_index, share.index);
  }
  s.usage.resize(static_cast<size_t>(max_index + 1));
  s.pods.reserve(holders.size());
  for (const PodHolding* holder : holders) {
    const PodHolding& pod = *holder;
    s.pods.push_back(pod);
    if (!pod.unknown_holding.empty() && s.gpus_withheld.empty()) {
      s.gpus_withheld = absl::StrCat("pod ", pod.pod_key, " holds GPUs here that Tessera cannot count (",
                                     pod.unknown_holding, "): the node takes no GPU pod until that is resolved");
      s.problems.push_back(s.gpus_withheld);
    }
    CountPodShape(pod.assignment.gpus, s.pod_shapes);
    for (const GpuShare& share : pod.assignment.gpus) {
      if (share.index < 0) continue;
      s.usage[static_cast<size_t>(share.index)].Add(share);
      const bool device_known = std::any_of(s.inventory.gpus.begin(), s.inventory.gpus.end(),
                                            [&](const GpuDevice& g) { return g.index == share.index; });
      if (known && !device_known) {
        s.problems.push_back(absl::StrCat("pod ", pod.pod_key, " holds GPU ", share.index,
                                          " which the node's inventory does not list"));
      }
    }
  }
}

// Σ per consumer of what the node's pods hold.
std::vector<std::pair<ConsumerKey, GpuTotals>> ConsumersOf(const std::vector<PodHolding>& pods) {
  std::vector<std::pair<ConsumerKey, GpuTotals>> out;
  for (const PodHolding& pod : pods) {
    if (pod.assignment.gpus.empty()) continue;
    ConsumerKey key = pod.consumer();
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& c) { return c.first == key; });
    if (it == out.end()) it = out.insert(out.end(), {std::move(key), GpuTotals{}});
    it->second.Add(TotalsOf(pod.assignment));
  }
  return out;
}

// What a node's healthy GPUs offer to shares (a MIG GPU's instances are
// not milli-GPU: no share lands there).
GpuTotals HealthyCapacityOf(const NodeState& s) {
  GpuTotals t;
  for (const GpuDevice& g : s.inventory.gpus) {
    if (!g.healthy || g.mig_mode) continue;
    t.milli += kOneGpu;
    t.memory += g.memory;
    ++t.gpus;
  }
  return t;
}

// Adds (sign +1) or takes away (-1) a node's consumers from `usage`.
void ApplyConsumers(const NodeState& s, int sign, ConsumerUsage& usage) {
  for (const auto& [key, totals] : s.consumers) {
    GpuTotals& t = usage[key];
    if (sign > 0) {
      t.Add(totals);
    } else {
      t.Subtract(totals);
      if (t.empty()) usage.erase(key);
    }
  }
}

// The shares of the pods whose bind time is known, newest first.
std::vector<GpuBinding> BindingsOf(const std::vector<const PodHolding*>& holders) {
  std::vector<GpuBinding> bindings;
  for (const PodHolding* pod : holders) {
    if (pod->bound_at == absl::InfinitePast()) continue;
    for (const GpuShare& share : pod->assignment.gpus) {
      bindings.push_back(GpuBinding{.bound_at = pod->bound_at, .index = share.index, .guaranteed = share.guaranteed,
                                    .limit = share.limit, .memory = share.memory});
    }
  }
  std::stable_sort(bindings.begin(), bindings.end(),
                   [](const GpuBinding& a, const GpuBinding& b) { return a.bound_at > b.bound_at; });
  return bindings;
}

// Reports every GPU whose holders add up past its compute or memory.
void ReportOvercommitment(NodeState& s) {
  for (const GpuDevice& g : s.inventory.gpus) {
    const GpuUsage& u = s.usage[static_cast<size_t>(g.index)];
    if (u.guaranteed > kOneGpu) {
      s.problems.push_back(absl::StrCat("GPU ", g.index, " is overcommitted: pods hold ", u.guaranteed.value(),
                                        "/1000 milli guaranteed"));
    }
    if (g.memory_known() && u.memory > g.memory) {
      s.problems.push_back(absl::StrCat("GPU ", g.index, " is overcommitted: pods hold ", u.memory.value(), " of ",
                                        g.memory.value(), " MiB"));
    }
  }
}

}  // namespace

std::shared_ptr<const NodeState> ClusterModel::Build(const std::string& name, const NodeEntry& e) {
  auto s = std::make_shared<NodeState>();
  s->name = name;
  s->pool = e.pool;
  s->version = next_node_version.fetch_add(1, std::memory_order_relaxed);
  s->inventory_error = e.inventory_error;
  if (e.inventory_error.ok()) s->inventory = e.inventory;
  if (e.allocatable.has_value()) s->host = HostOf(*e.allocatable, e.host_used, e.reserved);
  // A topology that could not be used leaves the node without one; say why.
  if (!s->inventory.topology_error.ok()) s->problems.emplace_back(s->inventory.topology_error.message());
  // MIG instances counted but not laid out: the GPUs take no pod; say why.
  if (!s->inventory.mig_error.ok()) s->problems.emplace_back(s->inventory.mig_error.message());
  const std::vector<const PodHolding*> holders = HoldersOf(e.pods, e.reserved);
  AddHoldings(holders, e.known, *s);
  s->bindings = BindingsOf(holders);
  s->consumers = ConsumersOf(s->pods);
  s->gpu_states = JoinGpuStates(s->inventory.gpus, s->usage);
  ReportOvercommitment(*s);
  return s;
}

// The flat view plugins read; points into `state`, which the snapshot keeps alive.
static NodeView ViewOf(const NodeState& state) {
  NodeView view{.name = state.name,
                .gpus = state.inventory.gpus,
                .inventory_error = state.inventory_error.ok() ? nullptr : &state.inventory_error,
                .usage = state.usage,
                .gpu_states = state.gpu_states,
                .bindings = state.bindings,
                .pod_shapes = state.pod_shapes};
  view.topology = state.inventory.topology.get();
  view.topology_error = state.inventory.topology_error.ok() ? nullptr : &state.inventory.topology_error;
  view.host = state.host.has_value() ? &*state.host : nullptr;
  view.gpus_withheld = state.gpus_withheld.empty() ? nullptr : &state.gpus_withheld;
  view.version = state.version;
  return view;
}

void ClusterModel::LayOutGpuStateBlock(ClusterSnapshot& s, size_t block, const ClusterSnapshot* prev) {
  using Block = ClusterSnapshot::GpuStateBlock;
  const size_t first = block * ClusterSnapshot::kNodesPerGpuStateBlock;
  const size_t end = std::min(s.nodes_.size(), first + ClusterSnapshot::kNodesPerGpuStateBlock);
  std::shared_ptr<Block> laid;
  if (prev != nullptr) {
    // The same nodes as `prev`'s block: copy it, and patch the nodes that
    // changed in place where their GPU count did not.
    laid = std::make_shared<Block>(*prev->gpu_state_blocks_[block]);
    for (size_t i = first; i < end && laid != nullptr; ++i) {
      if (s.nodes_[i] == prev->nodes_[i]) continue;
      const std::vector<GpuState>& states = s.nodes_[i]->gpu_states;
      const size_t k = i - first;
      if (states.size() != laid->at[k + 1] - laid->at[k]) {
        laid = nullptr;  // its run no longer fits: lay the block out anew
        break;
      }
      std::copy(states.begin(), states.end(), laid->states.begin() + laid->at[k]);
    }
  }
  if (laid == nullptr) {
    laid = std::make_shared<Block>();
    laid->at.reserve(end - first + 1);
    laid->at.push_back(0);
    for (size_t i = first; i < end; ++i) {
      const std::vector<GpuState>& states = s.nodes_[i]->gpu_states;
      laid->states.insert(laid->states.end(), states.begin(), states.end());
      laid->at.push_back(static_cast<uint32_t>(laid->states.size()));
    }
  }
  for (size_t i = first; i < end; ++i) {
    const size_t k = i - first;
    s.views_[i].gpu_states = absl::MakeConstSpan(laid->states.data() + laid->at[k], laid->at[k + 1] - laid->at[k]);
  }
  if (s.gpu_state_blocks_.size() <= block) s.gpu_state_blocks_.resize(block + 1);
  s.gpu_state_blocks_[block] = std::move(laid);
}

void ClusterModel::RebuildChangedNodes(ClusterSnapshot& next, const ClusterSnapshot& prev) {
  // Same nodes in the same order (the common case: pods come and go): copy
  // the previous arrays and rebuild only the nodes that changed, so a
  // publish costs O(nodes) pointer copies plus O(changed) rebuilds, with
  // no per-node name lookups.
  next.nodes_ = prev.nodes_;
  next.views_ = prev.views_;
  next.gpu_state_blocks_ = prev.gpu_state_blocks_;
  std::vector<bool> changed_blocks(prev.gpu_state_blocks_.size(), false);
  next.index_ = prev.index_;
  next.gpu_count_ = prev.gpu_count_;
  next.inventory_errors_ = prev.inventory_errors_;
  next.capacity_ = prev.capacity_;
  std::shared_ptr<ConsumerUsage> consumers;  // copied at the first node whose pods hold GPUs
  for (const std::string& name : dirty_) {
    auto entry = nodes_.find(name);
    const std::optional<NodeIndex> at = prev.index_->Find(name);
    if (entry == nodes_.end() || !at.has_value()) continue;  // cannot happen: the set is unchanged
    const NodeIndex i = *at;
    const NodeState& old = *next.nodes_[i];
    next.gpu_count_ -= old.inventory.gpus.size();
    if (!old.inventory_error.ok()) --next.inventory_errors_;
    std::shared_ptr<const NodeState> state = Build(name, entry->second);
    next.gpu_count_ += state->inventory.gpus.size();
    if (!state->inventory_error.ok()) ++next.inventory_errors_;
    next.capacity_.Subtract(HealthyCapacityOf(old));
    next.capacity_.Add(HealthyCapacityOf(*state));
    if (!old.consumers.empty() || !state->consumers.empty()) {
      if (consumers == nullptr) consumers = std::make_shared<ConsumerUsage>(*prev.consumers_);
      ApplyConsumers(old, -1, *consumers);
      ApplyConsumers(*state, +1, *consumers);
    }
    next.views_[i] = ViewOf(*state);
    changed_blocks[i / ClusterSnapshot::kNodesPerGpuStateBlock] = true;
    next.nodes_[i] = std::move(state);
  }
  next.consumers_ = consumers != nullptr ? std::move(consumers) : prev.consumers_;
  for (size_t block = 0; block < changed_blocks.size(); ++block) {
    if (changed_blocks[block]) LayOutGpuStateBlock(next, block, &prev);
  }
}

void ClusterModel::RebuildNodeSet(ClusterSnapshot& next, const ClusterSnapshot& prev) {
  auto consumers = std::make_shared<ConsumerUsage>();
  next.nodes_.reserve(nodes_.size());
  next.views_.reserve(nodes_.size());
  for (const auto& [name, entry] : nodes_) {
    std::shared_ptr<const NodeState> state;
    if (!dirty_.contains(name)) {
      if (auto i = prev.FindNode(name)) state = prev.nodes_[*i];
    }
    if (state == nullptr) state = Build(name, entry);
    next.gpu_count_ += state->inventory.gpus.size();
    if (!state->inventory_error.ok()) ++next.inventory_errors_;
    next.capacity_.Add(HealthyCapacityOf(*state));
    ApplyConsumers(*state, +1, *consumers);
    next.views_.push_back(ViewOf(*state));
    next.nodes_.push_back(std::move(state));
  }
  std::vector<std::string_view> names;
  names.reserve(next.nodes_.size());
  for (const std::shared_ptr<const NodeState>& node : next.nodes_) names.push_back(node->name);
  next.index_ = std::make_shared<const NodeNameIndex>(names);
  next.consumers_ = std::move(consumers);
  const size_t blocks = (next.nodes_.size() + ClusterSnapshot::kNodesPerGpuStateBlock - 1) /
                        ClusterSnapshot::kNodesPerGpuStateBlock;
  for (size_t block = 0; block < blocks; ++block) LayOutGpuStateBlock(next, block, nullptr);
}

std::shared_ptr<const ClusterSnapshot> ClusterModel::Publish() {
  absl::MutexLock lock(&mu_);
  // Only publishes store it, and they hold mu_: this is the latest.
  std::shared_ptr<const ClusterSnapshot> current = current_.load(std::memory_order_acquire);
  // Nothing changed: the current snapshot is already the truth.
  if (dirty_.empty() && telemetry_dirty_.empty() && !node_set_changed_ && current->index_ != nullptr) {
    return current;
  }
  auto next = std::make_shared<ClusterSnapshot>();
  next->generation_ = current->generation_ + 1;
  const ClusterSnapshot& prev = *current;

  if (!node_set_changed_ && prev.index_ != nullptr) {
    RebuildChangedNodes(*next, prev);
  } else {
    RebuildNodeSet(*next, prev);
  }
  AttachTelemetry(*next, prev);
  dirty_.clear();
  node_set_changed_ = false;
  std::shared_ptr<const ClusterSnapshot> published = std::move(next);
  current_.store(published, std::memory_order_release);
  return published;
}

void ClusterModel::SetNodeTelemetry(std::string name, std::shared_ptr<const NodeTelemetry> telemetry) {
  absl::MutexLock lock(&mu_);
  if (telemetry == nullptr) {
    if (telemetry_.erase(name) == 0) return;
  } else {
    telemetry_.insert_or_assign(name, std::move(telemetry));
  }
  telemetry_dirty_.insert(std::move(name));
}

void ClusterModel::AttachTelemetry(ClusterSnapshot& next, const ClusterSnapshot& prev) {
  const size_t n = next.nodes_.size();
  if (telemetry_.empty() && prev.telemetry_.empty()) {  // no source reports anything: views stay null
    telemetry_dirty_.clear();
    return;
  }
  auto attach = [&](NodeIndex i) {
    auto it = telemetry_.find(next.nodes_[i]->name);
    next.telemetry_[i] = it == telemetry_.end() ? nullptr : it->second;
    next.views_[i].telemetry = next.telemetry_[i].get();
  };
  if (next.index_ == prev.index_ && prev.telemetry_.size() == n) {
    // Same node order: keep the previous pointers, re-attach where the node
    // was rebuilt (its view was made anew) or its telemetry changed.
    next.telemetry_ = prev.telemetry_;
    for (const auto* names : {&dirty_, &telemetry_dirty_}) {
      for (const std::string& name : *names) {
        if (auto i = next.FindNode(name)) attach(*i);
      }
    }
  } else {
    next.telemetry_.assign(n, nullptr);
    for (NodeIndex i = 0; i < n; ++i) attach(i);
  }
  telemetry_dirty_.clear();
}

std::shared_ptr<const ClusterSnapshot> ClusterModel::Current() const {
  return current_.load(std::memory_order_acquire);
}

}  // namespace tessera
