// Which pods to evict from one node so that a pending pod fits there: the
// GPU-aware half of preemption.
//
// kube-scheduler's own dry run sees a node's GPUs as one number (the
// `tessera.io/gpu-milli` extended resource) and so frees "enough milli in
// total", often on the wrong GPUs. Here the pod must fit on some GPU (or GPU
// set) of the node as the policy in force judges it, with the victims gone.
//
// The rules, in order:
//  1. Only pods of lower (effective) priority may be evicted. A pod past its
//     tenant's priority lifetime counts at the tenant's expired priority.
//  2. A pod whose tenant is within its guarantee is never evicted for a pod
//     whose tenant would go over its own (or that has none).
//  3. Among the sets that make the pod fit: the lowest highest priority;
//     then the fewest pods within their tenant's guarantee (borrowed pods
//     go first); then the fewest pods; then the least run time lost.
// For a pod that asks one GPU, every GPU of the node is tried as the one to
// free, and the best set wins; a pod that asks several frees them together.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/profile.h"
#include "scheduler/tenancy/tenant_ledger.h"

namespace tessera {

/// The pod that wants to preempt.
struct Preemptor {
  int32_t priority = 0;
  std::optional<TenantIndex> tenant;
  GpuTotals ask;  ///< What it will hold (TotalsOfRequest).
};

/// What a pod asks of GPUs over all its GPUs, as quotas count it.
GpuTotals TotalsOfRequest(const CycleState& cycle);

/// How bad a victim set is; smaller is better, compared field by field.
struct VictimCost {
  int32_t highest_priority = INT32_MIN;
  int32_t within_guarantee = 0;
  int32_t pods = 0;
  int64_t run_millis = 0;  ///< Σ how long each victim has run: the work lost.
  auto operator<=>(const VictimCost&) const = default;
};

struct VictimSet {
  std::vector<const PodHolding*> pods;  ///< Point into the node's state.
  VictimCost cost;
};

/// The priority preemption weighs `pod` at: its own, or its tenant's
/// expired priority once it has run past the tenant's priority lifetime.
int32_t EffectivePriority(const PodHolding& pod, const TenantLedger& ledger, absl::Time now);

/// The best victims on `node` (state and view of one snapshot), or nullopt
/// when no set of evictable pods makes the pod fit. An empty set means the
/// pod fits already. Binds in flight are never victims.
std::optional<VictimSet> ChooseVictims(const Profile& profile, const CycleState& cycle, const Preemptor& preemptor,
                                       const NodeState& node, const NodeView& view, const TenantLedger& ledger,
                                       absl::Time now);

}  // namespace tessera
