// kube-scheduler's preempt verb answered from the cluster snapshot: which of
// the proposed nodes Tessera accepts, and with which victims.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "k8s/extender_args.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/tenancy/tenant_set.h"

namespace tessera {

/// What one preempt request decided, for metrics.
struct PreemptOutcome {
  size_t nodes_proposed = 0;
  size_t nodes_kept = 0;
  size_t victims = 0;
};

/// The ExtenderPreemptionResult JSON. For a pod that asks GPUs, each node
/// keeps the victims ChooseVictims finds there (by UID; NumPDBViolations
/// stays kube-scheduler's when the victims are its own, else 0: Tessera does
/// not know the budgets, and the Eviction API still honours them); a node it
/// finds no victims on, or does not know, is left out. Where the pod's GPUs
/// fit without evicting anything, and for a pod that asks no GPU,
/// kube-scheduler's proposal stands (it evicts for what it checks itself).
/// With a `route` (the pod's node pool, scheduler/framework/profile_set.h),
/// a node it does not admit is left out: evicting there places nothing.
/// `profile` is then the route's.
std::string AnswerPreemption(const k8s::ExtenderPreemptionArgs& args, const PodGpuRequest& request,
                             const ClusterSnapshot& snapshot, const Profile& profile, const TenantSet& tenants,
                             absl::Time now, PreemptOutcome* outcome, const PoolRoute* route = nullptr);

}  // namespace tessera
