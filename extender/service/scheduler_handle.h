// What the extender verbs read of the program and tell it: one handle, as
// kube-scheduler's framework.Handle is for its plugins, instead of a bag of
// callbacks.
//
// Reads are what one request reads once (the snapshot, the policy, the
// tenants, whether the model is in sync); they must be cheap and
// thread-safe. The notifications are the named steps a verb takes after it
// has decided (ExtenderService::Filter: reserve, learn, queue preemption,
// record the refusal); each default does nothing, so a handle implements
// only what its program has. extender/program.cc implements it for the
// program; tests, benchmarks and fuzz targets have fakes of their own.
#pragma once

#include <memory>
#include <string_view>

#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/common/clock.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/memo/worker_pool.h"
#include "scheduler/tenancy/tenant_set.h"
#include "extender/service/binder.h"
#include "extender/service/preemption_loop.h"
#include "extender/service/recent_refusals.h"

namespace tessera {

class SchedulerHandle {
 public:
  virtual ~SchedulerHandle() = default;

  // --- what a request reads, once -----------------------------------------
  /// The cluster as one immutable snapshot.
  [[nodiscard]] virtual std::shared_ptr<const ClusterSnapshot> Snapshot() const = 0;
  /// The policy in force: the default profile and one per node pool
  /// (scheduler/framework/profile_set.h), read once so one request places
  /// its pod by one policy.
  [[nodiscard]] virtual std::shared_ptr<const ProfileSet> Profiles() const = 0;
  /// The tenants in force; null: no quotas, preemption weighs priorities alone.
  [[nodiscard]] virtual std::shared_ptr<const TenantSet> Tenants() const { return nullptr; }
  /// False while the model is still being filled from the API server: then
  /// filter, bind and preempt answer as for a pod they cannot place yet
  /// rather than place pods on GPUs the model does not yet know are taken.
  [[nodiscard]] virtual bool Synced() const { return true; }
  /// What preemption reads as now (run time lost, expired priorities).
  [[nodiscard]] virtual const Clock& clock() const { return Clock::Real(); }

  // --- what the verbs use ---------------------------------------------------
  /// Binds pods through the API server; null without one (a --cluster-file),
  /// and then bind is not served and filter reserves nothing.
  [[nodiscard]] virtual Binder* binder() const { return nullptr; }
  /// Threads that share prioritize's work on nodes the score memo has not
  /// seen; null: prioritize runs on the request's thread alone. Read once,
  /// when the service is built.
  [[nodiscard]] virtual WorkerPool* score_pool() const { return nullptr; }

  // --- what the verbs tell, after deciding -----------------------------------
  /// Filter was asked about this pod (the workload learner's arrivals,
  /// scheduler/cache/workload_learner.h); must be cheap.
  virtual void PodArrived(std::string_view /*uid*/, const PodGpuRequest& /*request*/) const {}
  /// Filter refused this GPU pod on every node for reasons evicting may cure
  /// (Tessera's own preemption, extender/service/preemption_loop.h).
  virtual void PodUnschedulable(UnschedulablePod /*pod*/) const {}
  /// The preempt verb kept nodes for this pod: kube-scheduler preempts for it.
  virtual void SchedulerPreempted(std::string_view /*uid*/) const {}
  /// Where filter keeps why it refused a pod on every node (the GPU map page
  /// shows them) and forgets it once the pod fits or binds; null: nothing is kept.
  [[nodiscard]] virtual RecentRefusals* refusals() const { return nullptr; }
};

}  // namespace tessera
