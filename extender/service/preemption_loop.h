// Tessera's own preemption, for the pods kube-scheduler's cannot help.
//
// kube-scheduler 1.26 asks the extender's preempt verb only about nodes where
// its own dry run found victims. A node whose GPUs have room in total but on
// no single GPU (the common case with shared GPUs) passes kube-scheduler's
// filters with nothing evicted, so its dry run finds no victim there and
// never asks (fixed upstream only later). Filter tells this loop of every
// GPU pod it refused on every node for reasons evicting may cure; after a
// grace period in which kube-scheduler's own preemption may act, the loop
// chooses victims on every node as the preempt verb would
// (scheduler/tenancy/victim_choice.h), takes the node whose victims cost
// least, evicts them through the Eviction API (which honours
// PodDisruptionBudgets) and nominates the pod to the node
// (status.nominatedNodeName), as kube-scheduler does after its own preemption.
// Deleting the victims makes kube-scheduler retry the pod.
//
// Only the writer replica evicts (k8s/sync/leader_lease.h). Evicting for the
// same pod again waits `hold`: a victim with a grace period stays until its
// containers stop, and counting its GPUs free before would evict twice.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/pod_api.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/common/clock.h"
#include "scheduler/common/periodic_thread.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/model/gpu_request.h"
#include "scheduler/tenancy/tenant_set.h"

namespace tessera {

struct PreemptionLoopOptions {
  /// How long kube-scheduler's own preemption has before Tessera's acts.
  absl::Duration grace = absl::Seconds(2);
  /// After evicting for a pod, how long before evicting for it again.
  absl::Duration hold = absl::Seconds(30);
  /// A pod filter has not refused again for this long is forgotten (it was
  /// placed, deleted, or kube-scheduler stopped trying).
  absl::Duration forget_after = absl::Minutes(5);
  absl::Duration round = absl::Seconds(1);
  /// Bounds each API call.
  absl::Duration api_timeout = absl::Seconds(5);
};

/// A pod filter refused on every node.
struct UnschedulablePod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  int32_t priority = 0;
  std::string tenant_label = {};
  PodGpuRequest request = {};
  /// Its `tessera.io/task-type` label: the node pool it may go to.
  std::string task_type = {};
};

struct PreemptionLoopSources {
  ClusterModel* model = nullptr;
  PodDirectory* pods = nullptr;  ///< Whether a pod is still pending.
  k8s::PodApi* api = nullptr;
  std::function<std::shared_ptr<const Profile>()> profile;
  /// The profiles by node pool (the policy's `pools:`); when set, read in
  /// place of `profile`, and only the nodes of the pod's pool are weighed.
  std::function<std::shared_ptr<const ProfileSet>()> profiles = {};
  std::function<std::shared_ptr<const TenantSet>()> tenants;
  std::function<bool()> is_writer;
  MetricsRegistry* metrics = nullptr;
  const Clock* clock = &Clock::Real();
};

class PreemptionLoop {
 public:
  PreemptionLoop(PreemptionLoopSources sources, PreemptionLoopOptions options = {});
  ~PreemptionLoop();
  PreemptionLoop(const PreemptionLoop&) = delete;
  PreemptionLoop& operator=(const PreemptionLoop&) = delete;

  /// From filter: the pod fits nowhere now, for reasons evicting may cure.
  /// Cheap and thread-safe.
  void NoteUnschedulable(UnschedulablePod pod);
  /// From the preempt verb: kube-scheduler's own preemption found nodes for
  /// the pod, so this loop leaves it alone for a while.
  void NoteSchedulerPreempted(std::string_view uid);

  /// One pass (the thread's; tests call it): for each pod past its grace,
  /// victims chosen and evicted, the pod nominated. Nothing when this
  /// replica is not the writer. \return the pods it evicted for.
  int RunOnce();
  [[nodiscard]] size_t waiting() const;

  void Start();
  void Stop();

 private:
  struct Waiting {
    UnschedulablePod pod;
    absl::Time first_refused;
    absl::Time last_refused;
    absl::Time not_before;  // grace, or the hold after an eviction
  };
  // Chooses the node and evicts; false when no node has victims that work.
  bool PreemptFor(const Waiting& w, absl::Time now);

  PreemptionLoopSources sources_;
  const PreemptionLoopOptions options_;
  Counter* preemptions_ = nullptr;
  Counter* evictions_ = nullptr;
  Counter* evictions_refused_ = nullptr;
  Counter* no_victims_ = nullptr;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Waiting> waiting_ ABSL_GUARDED_BY(mu_);

  PeriodicThread thread_;  // last: stopped before what it reads goes
};

}  // namespace tessera
