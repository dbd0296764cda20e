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
// Threads: a bind is two steps. Begin() needs no API call: it finds the pod
// as the watch saw it, chooses its GPUs and reserves them (check-and-reserve
// under reserve_mu_, a few microseconds). It runs on the HTTP I/O thread the
// bind arrived on, so the GPUs count before kube-scheduler's next filter,
// sent right after this bind, is answered. Finish() writes the Binding and
// blocks on the API server, so it runs on a bind thread (--bind-threads,
// RequestDispatcher): many binds are in flight at once and no I/O thread
// waits. Each bind has a deadline (--bind-timeout, below kube-scheduler's
// extender httpTimeout) that bounds its wait for a bind thread and every API
// call, so its answer arrives while kube-scheduler still listens. A pod the
// watch has not delivered yet is read and reserved in Finish().
//
// The next filter does not always come after this bind: kube-scheduler starts
// each bind on a goroutine and goes on to the next pod's cycle, so under load
// the next filter often reaches Tessera first, and it saw the node as if the
// pod before it were not there (on 250 one-GPU nodes, 10-16 binds in 400 were
// refused for a share the previous pod had just taken, each pod then waiting
// out kube-scheduler's backoff). So filter assumes as kube-scheduler does: when
// its answer names one node, Assume() reserves the pod's GPUs there at once,
// for a short TTL, and the pod's bind takes that reservation over.
#pragma once

#include <functional>
#include "scheduler/tenancy/tenant_set.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/pod_api.h"
#include "k8s/extender_args.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/common/clock.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

struct BinderOptions {
  /// How long a bind's reservation counts without the watch confirming the
  /// bound pod. Long enough for a slow API server and watch; short enough
  /// that a lost confirmation does not strand GPUs for long.
  absl::Duration reservation_ttl = absl::Minutes(2);
  /// The tenants in force; empty or null: no quotas. Bind checks a tenant's
  /// maximum again under the reserve lock: two pods filtered before either
  /// bound must not both take the last of it.
  std::function<std::shared_ptr<const TenantSet>()> tenants = {};
  /// The profiles by node pool (the policy's `pools:`,
  /// scheduler/framework/profile_set.h); when set, read once per bind in
  /// place of the binder's `profile`: the pod's task type picks the profile
  /// that chooses its GPUs, and a node outside its pool is refused.
  std::function<std::shared_ptr<const ProfileSet>()> profiles = {};
  /// How long a filter's assumption (Assume) holds the pod's GPUs without
  /// its bind: kube-scheduler binds within moments unless a plugin of its own
  /// stops the pod, or binding waits for its volumes.
  absl::Duration assume_ttl = absl::Seconds(30);
  /// What a bind's deadline (Begin's `deadline`) and its duration are read
  /// from; tests drive a FakeClock. Reservations expire by the control loop's
  /// time (ExpireReservations).
  const Clock* clock = &Clock::Real();
};

class Binder {
 public:
  /// Everything must outlive the binder; `profile` is called once per bind.
  Binder(ClusterModel& model, const PodDirectory& pods, k8s::PodApi& api,
         std::function<std::shared_ptr<const Profile>()> profile, MetricsRegistry& metrics, BinderOptions options = {});

  /// A bind between Begin() and Finish(): the pod's GPUs reserved (or the
  /// bind's outcome already known), its Binding not yet written. Move-only.
  /// Destroyed without Finish() (a full bind queue, a shutdown), it releases
  /// the reservation it made.
  class Pending {
   public:
    Pending() = default;
    Pending(Pending&& other) noexcept;
    Pending& operator=(Pending&& other) noexcept;
    ~Pending();

   private:
    friend class Binder;
    void Abandon();
    [[nodiscard]] std::string pod_key() const { return ref_.namespace_name + "/" + ref_.name; }

    Binder* binder_ = nullptr;
    k8s::PodRef ref_;
    std::string node_;
    absl::Time deadline_ = absl::InfiniteFuture();
    absl::Time start_;
    std::optional<absl::Status> result_;  // the outcome, when Begin() already knows it
    std::optional<PodRecord> pod_;        // as the watch saw it; empty: Finish() reads it
    std::optional<GpuAssignment> assignment_;
    k8s::PodApi::Annotations annotations_;
    bool reserved_fresh_ = false;  // this bind made the reservation (not an earlier bind of the pod)
  };

  /// The first step of binding the pod to `args.node`, with no API call:
  /// reserves its GPUs (see the file comment). Thread-safe; quick.
  /// A bind that begins past `deadline` does nothing (Finish() answers
  /// DeadlineExceeded).
  Pending Begin(const k8s::ExtenderBindingArgs& args, absl::Time deadline = absl::InfiniteFuture());

  /// The second step: writes the Binding carrying the assignment. Blocks on
  /// the API server until `deadline` at most. OK only when the assignment and
  /// the Binding were both written. An error's message is what kube-scheduler
  /// records on the pod before it retries it. Thread-safe.
  ///
  /// A bind whose Binding would be sent past its deadline releases its GPUs
  /// and sends nothing. A Binding that times out may still land, so its
  /// reservation stays: the watch confirms it, a retry of the same pod takes
  /// it over, or the TTL releases it.
  absl::Status Finish(Pending pending);

  /// Begin() and Finish() on the calling thread.
  absl::Status Bind(const k8s::ExtenderBindingArgs& args, absl::Time deadline = absl::InfiniteFuture()) {
    return Finish(Begin(args, deadline));
  }

  /// Filter passed the pod on to `node` alone, so kube-scheduler will bind it
  /// there: reserves its GPUs now, until its bind takes them over or
  /// BinderOptions::assume_ttl passes (see the file comment). `request` is
  /// the one filter read from the pod (its GPUs and host request), not read
  /// again. Does nothing for a pod the watch has not delivered, a request for
  /// no GPU, a pod bound or with a bind in flight, or when the node can no
  /// longer take it (the bind will say so). Thread-safe; a few microseconds.
  void Assume(std::string_view uid, std::string_view node, const PodGpuRequest& request);

  /// Releases reservations the watch never confirmed within the TTL.
  /// \return how many were released.
  size_t ExpireReservations(absl::Time now);

 private:
  /// Chooses GPUs on the node and reserves them; the assignment reserved.
  /// `*fresh`: this call made the reservation (false: it kept the one an
  /// earlier bind of the pod made on that node).
  /// `assuming`: for Assume (assume_ttl, remembered as an assumption); else
  /// for a bind (reservation_ttl), which takes over an assumption on the same
  /// node as its own (`*fresh`, so a failed bind releases it).
  absl::StatusOr<GpuAssignment> Reserve(const PodRecord& pod, const PodGpuRequest& request, std::string_view node,
                                        bool* fresh, bool assuming = false);
  // Reserve's step on one snapshot: chooses the pod's GPUs on `node` as
  // `snapshot` shows it, runs the Reserve point and reserves them in the
  // model (whose guard refuses GPUs taken since `snapshot`).
  absl::StatusOr<GpuAssignment> PlaceAndReserve(const PodRecord& pod, const std::string& pod_key,
                                                const PodGpuRequest& request, std::string_view node,
                                                const ClusterSnapshot& snapshot, absl::Time expires_at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reserve_mu_);
  // FailedPrecondition naming the tenant when the pod would take its tenant
  // over its maximum in `snapshot` (binds in flight included).
  absl::Status CheckTenantMax(const PodRecord& pod, const CycleState& cycle, const ClusterSnapshot& snapshot) const;
  /// The profile that places `pod` on `node` (its pool's, by its task
  /// type), or FailedPrecondition when the node is outside the pod's pool.
  absl::StatusOr<std::shared_ptr<const Profile>> ProfileFor(const PodRecord& pod, const NodeState& node) const;
  /// Counts a bound pod by its node's pool and its task type.
  void CountBound(const PodRecord& pod, std::string_view node);
  /// Reserves the host request of a pod that asks for no GPU; false when the
  /// model does not know the node (nothing reserved), the model's refusal
  /// (FailedPrecondition) when it would not count it.
  absl::StatusOr<bool> ReserveHost(const PodRecord& pod, std::string_view node);
  /// Reserves for `p.pod_`, or sets `p.result_` to why not.
  void ReserveFor(Pending& p);
  void Release(const std::string& uid);
  // Gives the pod's plugin reservation up (Profile::Unreserve), if it has one.
  void UnreserveLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reserve_mu_);
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
  Counter& assumed_count_;      // tessera_filter_assumptions_total{result="assumed"}
  Counter& not_assumed_count_;  // ... {result="not_assumed"}
  Counter& reservations_expired_count_;  // tessera_reservations_expired_total
  Counter& assumptions_expired_count_;   // tessera_filter_assumptions_expired_total
  // Uids whose reservation a filter made (Assume) and no bind has taken over.
  absl::flat_hash_set<std::string> assumed_ ABSL_GUARDED_BY(reserve_mu_);
  // What Unreserve needs, for each reservation the profile's ReservePlugins
  // reserved (only profiles that have some): given up with the model's
  // reservation; dropped without Unreserve by the next ExpireReservations
  // once the watch shows the pod holding its GPUs.
  struct PluginReservation {
    std::shared_ptr<const Profile> profile;
    PodGpuRequest request;
    std::string node;
    std::vector<GpuShare> shares;
  };
  absl::flat_hash_map<std::string, PluginReservation> plugin_reservations_ ABSL_GUARDED_BY(reserve_mu_);
};

}  // namespace tessera
