// The `GET /debug` document: what an operator needs when allocations look
// wrong — is the watch in sync, which binds are in flight, which pods and
// nodes are inconsistent.
#pragma once

#include "extender/service/mig_advice.h"
#include "extender/service/tenant_accounting.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/client/reflector.h"
#include "k8s/sync/dra_watch.h"
#include "k8s/sync/pod_sink.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/cache/workload_learner.h"
#include "scheduler/framework/profile_set.h"

namespace tessera {

struct DebugInputs {
  const ClusterSnapshot* snapshot = nullptr;
  std::vector<std::pair<std::string, k8s::ReflectorStatus>> watches;  ///< By resource; empty without an API server.
  std::vector<k8s::PodProblem> pod_problems;
  /// DRA beside Tessera (k8s/sync/dra_watch.h); nullopt without an API server.
  std::optional<k8s::DraReport> dra = std::nullopt;
  std::string source;  ///< "kubeconfig ...", "cluster file ..."
  /// The writer election (k8s/sync/leader_lease.h); `name` empty without one.
  struct Lease {
    std::string name;      ///< NAMESPACE/NAME
    std::string identity;  ///< This replica's.
    std::string holder;    ///< As last seen.
    bool leader = false;
  };
  Lease lease = {};
  /// Each tenant as of the last accounting tick (extender/service/tenant_accounting.h).
  std::vector<TenantReport> tenants = {};
  /// Pods waiting for a MIG profile, with re-partitioning advice (extender/service/mig_advice.h).
  std::vector<MigWait> mig_waits = {};
  /// The workload learner (scheduler/cache/workload_learner.h); null: none.
  const WorkloadLearnerStatus* workload = nullptr;
  /// Whether the learned mix is in force (not the policy file's lists).
  bool learned_workload_in_force = false;
  /// The profiles in force (scheduler/framework/profile_set.h); null, or
  /// without pools: no "pools" entry.
  const ProfileSet* profiles = nullptr;
};

/// Pretty-printed JSON: {"source", "generation", "nodes", "gpus", "watches": {..},
/// "inFlight": [{pod, uid, node, gpus}], "nodeProblems": [{node, problem}],
/// "podProblems": [{pod, uid, kind, message}], "lease": {name, identity,
/// holder, leader} when replicas elect a writer, "tenants": [{name, guaranteed,
/// max, used, borrowed, lent, withinGuarantee, gpuMilliSeconds,
/// gpuMemoryMiBSeconds, podsOverMaxRunTime}] when the policy has tenants,
/// "migWaiting": [{profile, pods, repartition: {node, gpu, gpuUuid, model,
/// start, destroyFreeInstances: [{profile, start, uuid}], podsToEvict,
/// geometryLoss} or null}] when pods wait for MIG instances, "workload":
/// {enabled, inForce ("learned" or "policy file"), arrivals, windowPods,
/// windowKinds, publications, retellings (the mix in force told the
/// cluster anew), droppedObservations, learned: ["<weight> cpu=.. gpu=..",
/// ...] (the last mix learned, most common first)}, "pools":
/// {defaultPlugins, routes: [{pool, taskTypes, exclusive, plugins, nodes,
/// gpuMilli: {capacity, allocated}}]} when the policy routes task types to
/// node pools}, "dra": {api ("served", "not served", "unknown"), synced,
/// slices, claims, sharedNodes (GPU nodes a DRA driver publishes too), held
/// ["ns/claim: node GPU i (driver/pool/device)"], unmatched [why]} with an
/// API server.
std::string RenderDebugState(const DebugInputs& in);

}  // namespace tessera
