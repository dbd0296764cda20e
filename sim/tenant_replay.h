// The tenant replay: the trace's pods on an event clock, through one profile,
// with tenants' quotas, priorities and GPU-aware preemption
// (scheduler/tenancy/), as the extender applies them.
//
// Unlike the paper's replay (sim/replay.h: shuffled, inflated, no time, no
// deletion), this one keeps the trace's own pods and times:
//
//   clock     seconds; pod i arrives at creation_time / arrival_speedup and,
//             once placed, holds its GPUs for deletion_time − creation_time
//             (its life in the trace), then leaves. At one instant,
//             departures go before arrivals.
//   arrival   the quota check (TenantLedger::Admit): over the tenant's max,
//             the pod is refused and gone (as the extender's filter answers
//             "never"). Else the profile's best node, as the paper's replay
//             picks it. None (or too little idle for a tenant over its
//             guarantee to borrow): preemption. For each node,
//             ChooseVictims; the node with the smallest VictimCost wins
//             (ties: the run's node rank); its victims are evicted and the
//             pod placed there. A pod that asks no GPU never preempts.
//             Still nothing: the pod waits.
//   waiting   pods wait in one queue, highest priority first, then longest
//             waiting. Whenever GPUs are freed (a departure, an eviction) the
//             queue is tried again in that order, placing where pods fit
//             now, without preemption: a pod preempts only when it arrives.
//   eviction  a victim loses its work: it waits again from the instant it was
//             evicted and, once placed, runs its whole life again (as the
//             controller that owns it would recreate it).
//   end       when no event is left; pods still waiting were never placed.
//
// Measured per tenant (TenantStats): time to place is, per placement, the
// seconds from the instant the pod entered the queue (its arrival, or its
// eviction) to the instant it was placed; 0 when it fitted at once.
// Guarantee met is time-weighted over the run, in milli-GPU:
//
//   ∫ min(held, guaranteed) dt  /  ∫ min(wanted, guaranteed) dt
//
// where held is what the tenant's running pods hold and wanted is held plus
// what its waiting pods ask: the share of the guarantee it had while it
// asked for it. 100% also when it never asked.
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/framework/profile.h"
#include "scheduler/tenancy/tenant_set.h"
#include "sim/cluster.h"
#include "sim/placement_check.h"
#include "sim/pod_tenancy.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace tessera::sim {

/// One tenant's run (the pods of no tenant have a TenantStats of their own).
struct TenantStats {
  int64_t submitted = 0;         ///< Pods that arrived.
  int64_t placed = 0;            ///< Pods placed at least once.
  int64_t refused_over_max = 0;  ///< Pods refused at arrival: their tenant would go over its max.
  int64_t never_placed = 0;      ///< Pods still waiting at the end (refused ones not counted).
  int64_t evicted = 0;           ///< Evictions of its pods, as victims (a pod may be evicted twice).
  int64_t preemptions = 0;       ///< Placements of its pods that evicted others.
  int64_t victims = 0;           ///< Pods those placements evicted.
  std::vector<int64_t> waits;    ///< Seconds waited, per placement, in order.
  /// ∫ min(held, guaranteed) dt and ∫ min(wanted, guaranteed) dt in milli-GPU
  /// seconds; both 0 for a tenant without a milli-GPU guarantee.
  int64_t guarantee_held = 0;
  int64_t guarantee_wanted = 0;
};

struct TenantReplayResult {
  /// By TenantIndex; the last entry is the pods of no tenant.
  std::vector<TenantStats> tenants;
  int64_t placed_pods = 0;
  int64_t end_time = 0;  ///< The last event's instant, seconds.
  bool memoised = false;
  /// Preemptions whose node, victims gone, did not take the pod after all
  /// (ChooseVictims and the profile disagreeing); 0 unless something is wrong.
  int64_t preemption_misses = 0;
  /// Placements that broke PlacementViolation's rules (sim/placement_check.h; each still made).
  PlacementViolations violations;
};

struct TenantReplayInput {
  const Profile* profile = nullptr;
  const Cluster* empty_cluster = nullptr;        ///< Copied; the run starts from it.
  const std::vector<TracePod>* pods = nullptr;   ///< With times (creation_time, deletion_time).
  const PodClasses* classes = nullptr;
  const TenantSet* tenants = nullptr;
  const std::vector<PodTenancy>* tenancy = nullptr;  ///< Per pod.
  const std::vector<uint32_t>* node_rank = nullptr;  ///< Ties between equal scores go to the lowest.
  int64_t arrival_speedup = 1;                   ///< Arrivals come this many times faster; lives keep their length.
  uint64_t seed = 0;                             ///< Salts the pods.
  MemoMode memo = MemoMode::kAuto;
};

/// Runs the trace; every pod of `pods` must have times.
TenantReplayResult TenantReplay(const TenantReplayInput& input);

/// A permutation of 0..n-1 drawn from `seed` (Fisher–Yates over Random).
std::vector<uint32_t> NodeRanks(size_t n, uint64_t seed);

}  // namespace tessera::sim
