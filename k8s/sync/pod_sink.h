// Applies Pods from the API server to the cluster model and the pod directory.
//
// The pod's `tessera.io/gpu-assignment` annotation is the source of truth:
// a bound pod (spec.nodeName set, not Succeeded/Failed) with an assignment
// holds those GPUs, so a restarted Tessera rebuilds exactly the allocations
// it had from the initial list. Every bound pod, GPU or not, holds its
// effective CPU and memory request (k8s/pod_host_request.h) on its node's
// host, as kube-scheduler counts it; the initial list rebuilds those too.
#pragma once

#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "k8s/client/reflector.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

/// Something wrong with a pod's assignment, as /debug shows it.
struct PodProblem {
  std::string uid;
  std::string pod;      ///< "namespace/name"
  std::string kind;     ///< metric label: "invalid_assignment", "node_mismatch"
  std::string message;
};

class PodSink final : public ReflectorSink {
 public:
  /// \param metrics may be null.
  PodSink(ClusterModel& model, PodDirectory& directory, MetricsRegistry* metrics);

  void BeginList() override;
  absl::Status Upsert(simdjson::dom::element object) override;
  absl::Status Delete(simdjson::dom::element object) override;
  void EndList() override;
  void Flush() override;

  /// Current problems, by uid.
  [[nodiscard]] std::vector<PodProblem> problems() const;

 private:
  /// The pod is gone or finished: it holds nothing, a bind in flight for it is moot.
  void Forget(const std::string& uid);
  /// A bound pod that holds no GPU Tessera counts: only its host request.
  void CountHostOnly(const PodRecord& pod);
  // The bound pod's holding of its host request alone (no GPU).
  static PodHolding HostHolding(const PodRecord& pod);
  // What a pod whose assignment is unreadable holds by its
  // tessera.io/visible-devices and its node's inventory; an error when that
  // cannot be told (no such annotation, the node unknown yet, a MIG instance).
  absl::StatusOr<GpuAssignment> HandedDevices(const PodRecord& pod) const;
  // Upsert of a live pod without annotations: it holds its host request once bound.
  void UpsertPlainPod(const PodRecord& pod, bool host_problem);
  // Upsert of a live pod with annotations: its GPUs come from its assignment.
  void UpsertAnnotatedPod(PodRecord pod, bool host_problem);
  void SetProblem(const PodRecord& pod, std::string kind, std::string message);
  void ClearProblem(const std::string& uid);

  ClusterModel& model_;
  PodDirectory& directory_;
  MetricsRegistry* metrics_;
  absl::flat_hash_set<std::string> tracked_;  // uids in the model or the directory
  absl::flat_hash_set<std::string> listed_;
  bool listing_ = false;
  bool dirty_ = false;

  mutable absl::Mutex problems_mu_;
  absl::btree_map<std::string, PodProblem> problems_ ABSL_GUARDED_BY(problems_mu_);
};

}  // namespace tessera::k8s
