// The extender verbs as pure functions of the request body: decode the wire
// types, run the policy in force over one cluster snapshot, encode the answer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/common/clock.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/memo/score_memo.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/tenancy/tenant_set.h"
#include "extender/service/binder.h"
#include "extender/service/preemption_loop.h"
#include "extender/service/recent_refusals.h"

namespace tessera {

/// Where the service reads the cluster and the policy from; both are called
/// once per request and must be cheap and thread-safe.
struct ExtenderSources {
  std::function<std::shared_ptr<const ClusterSnapshot>()> snapshot;
  std::function<std::shared_ptr<const Profile>()> profile;
  /// Binds pods through the API server; null when Tessera runs without one
  /// (a --cluster-file), and then bind is not served.
  Binder* binder = nullptr;
  /// False while the model is still being filled from the API server; then
  /// filter and bind answer an Error (kube-scheduler retries the pod later)
  /// rather than place pods on GPUs the model does not yet know are taken.
  /// Null: always in sync (a cluster file).
  std::function<bool()> synced = {};
  /// Threads that share prioritize's work on nodes the score memo has not
  /// seen (a new pod shape, a policy reload); not owned, must outlive the
  /// service. Null: prioritize runs on the request's thread alone.
  WorkerPool* score_pool = nullptr;
  /// The tenants in force (scheduler/tenancy/tenant_set.h); null or empty:
  /// no quotas, and preemption weighs priorities alone.
  std::function<std::shared_ptr<const TenantSet>()> tenants = {};
  /// The profiles in force, the default and one per node pool that pods of
  /// given task types go to (scheduler/framework/profile_set.h; the policy
  /// file's `pools:`), read once per request in place of `profile`, so one
  /// request places its pod by one policy. Empty: `profile` alone, no pools.
  std::function<std::shared_ptr<const ProfileSet>()> profiles = {};
  /// What preemption reads as now (run time lost, expired priorities).
  const Clock* clock = &Clock::Real();
  /// Told of every GPU pod filter refused on every node for reasons
  /// evicting may cure (extender/service/preemption_loop.h); may be empty.
  std::function<void(UnschedulablePod)> unschedulable = {};
  /// Told of every pod the preempt verb kept nodes for; may be empty.
  std::function<void(std::string_view uid)> scheduler_preempted = {};
  /// Keeps, per pod filter refused on every node, the reasons it gave (the
  /// GPU map page shows them); a filter that passes the pod somewhere, or
  /// its bind, forgets it. Not owned; null: nothing is kept.
  RecentRefusals* refusals = nullptr;
  /// Told of every pod filter is asked about, with its UID (the workload
  /// learner's arrivals: scheduler/cache/workload_learner.h); must be cheap.
  /// May be empty.
  std::function<void(std::string_view uid, const PodGpuRequest& request)> arrival = {};
};

class ExtenderService {
 public:
  /// \param metrics receives filter rejections per reason; must outlive the service.
  ExtenderService(ExtenderSources sources, MetricsRegistry& metrics);

  /// `POST /filter`: ExtenderArgs -> ExtenderFilterResult JSON.
  /// \return InvalidArgument for a body that is not valid ExtenderArgs (HTTP 400).
  ///   A pod whose tessera annotations are invalid is not an error here: every
  ///   node fails as unresolvable with the annotation's problem as the reason.
  absl::StatusOr<std::string> Filter(std::string_view body) const;

  /// `POST /prioritize`: ExtenderArgs -> HostPriorityList JSON, scores 0..10
  /// in request order. Nodes where the pod does not fit score 0.
  absl::StatusOr<std::string> Prioritize(std::string_view body) const;

  /// `POST /bind`: ExtenderBindingArgs -> ExtenderBindingResult JSON,
  /// `{"Error":""}` when the pod was bound, else the reason, which
  /// kube-scheduler records before it retries the pod.
  /// \return InvalidArgument for a malformed body (HTTP 400); Unimplemented
  ///   (HTTP 501) when there is no binder.
  /// Blocks on the API server until `deadline` at most: call it from a bind
  /// thread, never from an HTTP I/O thread (or use StartBind()).
  absl::StatusOr<std::string> Bind(std::string_view body, absl::Time deadline = absl::InfiniteFuture()) const {
    return StartBind(body, deadline)();
  }

  /// What is left of a bind after StartBind(): blocks on the API server.
  using BindRest = absl::AnyInvocable<absl::StatusOr<std::string>()>;
  /// `POST /bind` in two steps (Binder::Begin, Binder::Finish): decodes the
  /// body and reserves the pod's GPUs now, on the calling thread, without
  /// waiting on anything; the returned rest writes the Binding and answers
  /// as Bind() does. Destroyed unrun, the rest releases the reservation.
  BindRest StartBind(std::string_view body, absl::Time deadline = absl::InfiniteFuture()) const;

  /// `POST /preempt`: ExtenderPreemptionArgs (either victims form) ->
  /// ExtenderPreemptionResult JSON (`NodeNameToMetaVictims`). For each node
  /// kube-scheduler proposes, the victims that make the pod fit on some GPU
  /// there (scheduler/tenancy/victim_choice.h), which may differ from
  /// kube-scheduler's; a node where none do is left out. A pod without a
  /// GPU request keeps kube-scheduler's victims.
  /// \return InvalidArgument for a malformed body (HTTP 400).
  absl::StatusOr<std::string> Preempt(std::string_view body) const;

 private:
  // The profiles in force: sources_.profiles(), or sources_.profile() alone.
  [[nodiscard]] std::shared_ptr<const ProfileSet> CurrentProfiles() const;

  ExtenderSources sources_;
  MetricsRegistry& metrics_;
  // Prioritize's memo counters, looked up once: the registry takes a lock
  // and builds a label map per lookup.
  Counter& nodes_computed_;
  Counter& nodes_from_memo_;
  Counter& memo_bypassed_;
  Counter& preempt_nodes_kept_;
  Counter& preempt_nodes_dropped_;
  Counter& shortlist_dropped_;  // filter's nodes that fit but were not among the best few
  Counter& preempt_victims_;
  // Prioritize's per-node answers of the profile in force, kept between
  // requests; a cache, so the verbs stay logically const.
  mutable ScoreMemoHolder score_memo_;
};

}  // namespace tessera
