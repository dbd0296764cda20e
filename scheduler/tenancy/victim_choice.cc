#include "scheduler/tenancy/victim_choice.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace tessera {
namespace {

// A node as it would be with some of its pods gone: the snapshot's view
// with usage and host re-counted. The profile judges it as any node.
class NodeWithout {
 public:
  explicit NodeWithout(const NodeView& base) : base_(base), usage_(base.usage.begin(), base.usage.end()) {
    if (base.host != nullptr) host_ = *base.host;
  }

  void Remove(const PodHolding& pod) { Count(pod, -1); }
  void Restore(const PodHolding& pod) { Count(pod, +1); }

  [[nodiscard]] bool Fits(const Profile& profile, const CycleState& cycle) {
    states_ = JoinGpuStates(base_.gpus, usage_);
    NodeView view = base_;
    view.usage = usage_;
    view.gpu_states = states_;
    view.host = host_.has_value() ? &*host_ : nullptr;
    view.version = 0;  // not the snapshot's node: nothing may be memoised on it
    return profile.Filter(cycle, view).ok();
  }

 private:
  void Count(const PodHolding& pod, int sign) {
    for (const GpuShare& s : pod.assignment.gpus) {
      if (s.index < 0 || static_cast<size_t>(s.index) >= usage_.size()) continue;
      GpuUsage& u = usage_[static_cast<size_t>(s.index)];
      u.guaranteed += s.guaranteed * sign;
      u.limit += s.limit * sign;
      u.memory += s.memory * sign;
      u.memory_limit += s.memory_limit * sign;
      u.pods += sign;
    }
    if (host_.has_value()) {
      host_->cpu_used += pod.host.cpu * sign;
      host_->memory_used += pod.host.memory * sign;
    }
  }

  const NodeView& base_;
  std::vector<GpuUsage> usage_;
  std::optional<HostResources> host_;
  std::vector<GpuState> states_;
};

struct Candidate {
  const PodHolding* pod;
  int32_t priority;
  std::optional<TenantIndex> tenant;
  bool within_guarantee;  // its tenant holds no more than its guarantee
  GpuTotals totals;
};

// Keep-first order: the pods most worth keeping are tried back first, so the
// victims are the least worth keeping. Small pods are kept before large
// ones, so that one large pod goes rather than several small ones.
bool KeepFirst(const Candidate& a, const Candidate& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.within_guarantee != b.within_guarantee) return a.within_guarantee;
  if (a.totals.milli != b.totals.milli) return a.totals.milli < b.totals.milli;
  if (a.pod->bound_at != b.pod->bound_at) return a.pod->bound_at < b.pod->bound_at;
  return a.pod->uid < b.pod->uid;
}

bool HoldsGpu(const PodHolding& pod, int32_t index) {
  return std::any_of(pod.assignment.gpus.begin(), pod.assignment.gpus.end(),
                     [&](const GpuShare& s) { return s.index == index; });
}

// A borrowing preemptor may take from a borrowing tenant only what it
// borrows: evicting more would take the tenant under its guarantee. A tenant
// borrows in the resources it holds more of than guaranteed; what is taken
// must fit within what it borrows in one of them.
bool TakesOnlyBorrowed(const std::vector<const Candidate*>& victims, const TenantLedger& ledger) {
  absl::flat_hash_map<TenantIndex, GpuTotals> taken;
  for (const Candidate* c : victims) {
    if (c->tenant.has_value()) taken[*c->tenant].Add(c->totals);
  }
  for (const auto& [tenant, totals] : taken) {
    const GpuTotals borrowed = ledger.borrowed(tenant);
    bool within_borrowed = false;
    for (GpuResource r : kGpuResources) {
      within_borrowed = within_borrowed || (AmountOf(borrowed, r) > 0 && AmountOf(totals, r) <= AmountOf(borrowed, r));
    }
    if (!within_borrowed) return false;
  }
  return true;
}

// Evicts every removable pod, then tries each back in keep-first order and
// keeps it where the pod still fits. nullopt: even all of them do not make room.
std::optional<std::vector<const Candidate*>> Reprieve(const NodeView& view, const std::vector<const Candidate*>& removable,
                                                      const Profile& profile, const CycleState& cycle) {
  NodeWithout node(view);
  for (const Candidate* c : removable) node.Remove(*c->pod);
  if (!node.Fits(profile, cycle)) return std::nullopt;
  std::vector<const Candidate*> victims;
  for (const Candidate* c : removable) {
    node.Restore(*c->pod);
    if (!node.Fits(profile, cycle)) {
      node.Remove(*c->pod);
      victims.push_back(c);
    }
  }
  return victims;
}

VictimSet Priced(const std::vector<const Candidate*>& victims, absl::Time now) {
  VictimSet set;
  for (const Candidate* c : victims) {
    set.pods.push_back(c->pod);
    set.cost.highest_priority = std::max(set.cost.highest_priority, c->priority);
    set.cost.within_guarantee += c->within_guarantee ? 1 : 0;
    ++set.cost.pods;
    if (c->pod->bound_at != absl::InfinitePast() && c->pod->bound_at < now) {
      set.cost.run_millis += absl::ToInt64Milliseconds(now - c->pod->bound_at);
    }
  }
  return set;
}

// EffectivePriority once the pod's tenant is known.
int32_t PriorityOf(const PodHolding& pod, std::optional<TenantIndex> tenant, const TenantSet& tenants,
                   absl::Time now) {
  if (!tenant.has_value()) return pod.priority;
  const TenantSpec& spec = tenants.tenant(*tenant);
  const bool expired = spec.priority_lifetime != absl::InfiniteDuration() && pod.bound_at != absl::InfinitePast() &&
                       now - pod.bound_at > spec.priority_lifetime;
  return expired ? std::min(pod.priority, spec.expired_priority) : pod.priority;
}

}  // namespace

GpuTotals TotalsOfRequest(const CycleState& cycle) {
  const auto n = static_cast<int64_t>(cycle.gpu_count());
  return GpuTotals{cycle.guaranteed_per_gpu() * n, cycle.request().memory * n, n};
}

int32_t EffectivePriority(const PodHolding& pod, const TenantLedger& ledger, absl::Time now) {
  const TenantSet& tenants = ledger.tenants();
  return PriorityOf(pod, tenants.TenantOf(pod.namespace_name(), pod.tenant_label), tenants, now);
}

std::optional<VictimSet> ChooseVictims(const Profile& profile, const CycleState& cycle, const Preemptor& preemptor,
                                       const NodeState& node, const NodeView& view, const TenantLedger& ledger,
                                       absl::Time now) {
  if (NodeWithout(view).Fits(profile, cycle)) return VictimSet{};
  const bool preemptor_borrows = !ledger.tenants().empty() && !ledger.StaysWithinGuarantee(preemptor.tenant, preemptor.ask);
  std::vector<Candidate> candidates;
  for (const PodHolding& pod : node.pods) {
    if (pod.in_flight) continue;
    const std::optional<TenantIndex> tenant = ledger.tenants().TenantOf(pod.namespace_name(), pod.tenant_label);
    const int32_t priority = PriorityOf(pod, tenant, ledger.tenants(), now);
    if (priority >= preemptor.priority) continue;
    const bool within = tenant.has_value() && ledger.WithinGuarantee(*tenant);
    if (preemptor_borrows && within) continue;  // rule 2
    candidates.push_back(Candidate{&pod, priority, tenant, within, TotalsOf(pod.assignment)});
  }
  std::sort(candidates.begin(), candidates.end(), KeepFirst);

  // The sets of pods to try: those on one GPU at a time (and every pod that
  // holds no GPU) for a one-GPU pod, else all of them.
  std::vector<std::vector<const Candidate*>> attempts;
  if (cycle.gpu_count() == 1) {
    for (const GpuDevice& gpu : view.gpus) {
      std::vector<const Candidate*>& attempt = attempts.emplace_back();
      for (const Candidate& c : candidates) {
        if (c.pod->assignment.gpus.empty() || HoldsGpu(*c.pod, gpu.index)) attempt.push_back(&c);
      }
    }
  } else {
    std::vector<const Candidate*>& attempt = attempts.emplace_back();
    for (const Candidate& c : candidates) attempt.push_back(&c);
  }

  std::optional<VictimSet> best;
  for (const std::vector<const Candidate*>& removable : attempts) {
    if (removable.empty()) continue;
    std::optional<std::vector<const Candidate*>> victims = Reprieve(view, removable, profile, cycle);
    if (!victims.has_value() || victims->empty()) continue;
    if (preemptor_borrows && !TakesOnlyBorrowed(*victims, ledger)) continue;
    VictimSet set = Priced(*victims, now);
    if (!best.has_value() || set.cost < best->cost) best = std::move(set);
  }
  return best;
}

}  // namespace tessera
