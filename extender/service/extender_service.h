// The extender verbs: decode the wire types, decide by the policy in force
// over one cluster snapshot, encode the answer. What a verb reads and what it
// tells the program once it has decided go through one SchedulerHandle
// (scheduler_handle.h); deciding is a function of the request and what the
// handle returned, and each side effect is a named step after it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/framework/cycle_state.h"
#include "scheduler/memo/score_memo.h"
#include "scheduler/metrics/metrics.h"
#include "k8s/extender_args.h"
#include "k8s/extender_results.h"
#include "extender/service/scheduler_handle.h"

namespace tessera {

class ExtenderService {
 public:
  /// \param handle what the verbs read and tell; must outlive the service.
  /// \param metrics receives filter rejections per reason; must outlive the service.
  ExtenderService(const SchedulerHandle& handle, MetricsRegistry& metrics);

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
  struct FilterDecision;
  // Filter's decision for a pod with a readable request, in sync: which
  // nodes pass, which fail and why. Reads the handle; tells it and counts nothing.
  void DecideFilter(const k8s::ExtenderArgs& args, const CycleState& cycle, FilterDecision& decision) const;
  // Filter's steps after deciding, each named for what it does.
  void ReserveOnTheOneNode(const k8s::ExtenderArgs& args, const CycleState& cycle,
                           const FilterDecision& decision) const;
  void QueuePreemptionIfItMayHelp(const k8s::ExtenderArgs& args, const CycleState& cycle,
                                  const FilterDecision& decision) const;
  // The rejections per reason, and the nodes the shortlist left out.
  void CountRejections(const FilterDecision& decision) const;

  const SchedulerHandle& handle_;
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
