// Bind: reserve the pod's GPUs and host request in the model, then create
// the Binding, which carries the assignment annotation onto the pod in the
// same write. (A pod that asks for no GPU reserves only its CPU and memory
// and is bound with no assignment.)
//
// The reservation is what keeps concurrent scheduling honest. kube-scheduler
// binds asynchronously and calls filter/prioritize for the next pods before
// earlier binds finish, so the GPUs must count from the moment bind starts.
// Check-and-reserve is one critical section over the current snapshot, so
// of two pods racing for the last share of a GPU exactly one gets it.
//
// Threads: Bind blocks on the API server (one Binding POST, sometimes a GET),
// so it never runs on an HTTP I/O thread. The router hands each bind to the
// bind pool (--bind-threads, RequestDispatcher), and many binds are in flight
// at once; only the check-and-reserve step is serialised (reserve_mu_), never
// the API call. Each bind has a deadline (--bind-timeout, below kube-
// scheduler's extender httpTimeout) that bounds its wait for a bind thread
// and every API call it makes, so its answer arrives while kube-scheduler
// still listens.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/pod_api.h"
#include "k8s/extender_args.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/framework/profile.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

struct BinderOptions {
  /// How long a bind's reservation counts without the watch confirming the
  /// bound pod. Long enough for a slow API server and watch; short enough
  /// that a lost confirmation does not strand GPUs for long.
  absl::Duration reservation_ttl = absl::Minutes(2);
};

class Binder {
 public:
  /// Everything must outlive the binder; `profile` is called once per bind.
  Binder(ClusterModel& model, const PodDirectory& pods, k8s::PodApi& api,
         std::function<std::shared_ptr<const Profile>()> profile, MetricsRegistry& metrics, BinderOptions options = {});

  /// Binds the pod to `args.node`. OK only when the assignment annotation
  /// and the Binding were both written. An error's message is what
  /// kube-scheduler records on the pod before it retries it. Thread-safe.
  ///
  /// `deadline` bounds the API calls; a bind that starts after it does
  /// nothing (DeadlineExceeded). A Binding that times out may still land, so
  /// its reservation stays: the watch confirms it, a retry of the same pod
  /// takes it over, or the TTL releases it.
  absl::Status Bind(const k8s::ExtenderBindingArgs& args, absl::Time deadline = absl::InfiniteFuture());

  /// Releases reservations the watch never confirmed within the TTL.
  /// \return how many were released.
  size_t ExpireReservations(absl::Time now);

 private:
  /// Chooses GPUs on the node and reserves them; the assignment reserved.
  absl::StatusOr<GpuAssignment> Reserve(const PodRecord& pod, const PodGpuRequest& request, std::string_view node);
  /// Reserves the host request of a pod that asks for no GPU.
  void ReserveHost(const PodRecord& pod, std::string_view node);
  /// The pod to bind: as the watch last saw it, or as the API server has it
  /// when the watch lags; FailedPrecondition when its uid is not `ref`'s.
  absl::StatusOr<PodRecord> PodToBind(const k8s::PodRef& ref, absl::Time deadline);
  absl::Status Fail(std::string_view reason, absl::Status status);

  ClusterModel& model_;
  const PodDirectory& pods_;
  k8s::PodApi& api_;
  std::function<std::shared_ptr<const Profile>()> profile_;
  MetricsRegistry& metrics_;
  BinderOptions options_;
  absl::Mutex reserve_mu_;  // check-and-reserve is one step
};

}  // namespace tessera
