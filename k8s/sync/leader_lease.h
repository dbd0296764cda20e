// One writer among replicas: a coordination.k8s.io/v1 Lease, held the way
// client-go's leader election holds one.
//
// Every replica of Tessera serves filter, prioritize and bind (each
// kube-scheduler calls its own sidecar, and only the active kube-scheduler
// calls at all). What Tessera writes on its own initiative — the nudge after
// an outage today; evictions, published capacity and accounting later — must
// come from one replica: the one that holds this lease.
//
// The rules, as client-go's:
// * A lease is free when it has no holder, or when its record (holder, renew
//   time, transitions) has not changed for leaseDurationSeconds of *our*
//   clock since we first saw it so: clocks of two machines are never
//   compared.
// * Taking or renewing is a PUT with the resourceVersion read, so of two
//   replicas racing for a free lease exactly one wins (the other gets 409).
// * The holder counts itself the leader only while its last successful
//   renewal is younger than renew_deadline, which is shorter than the lease
//   duration: a holder cut off from the API server stops writing before a
//   standby may take over. Two holders may still overlap briefly (a write in
//   flight as the deadline passes); every write guarded by the lease must be
//   safe to repeat.
// * A replica that stops cleanly releases the lease (no holder), so that a
//   rolling update does not wait out the lease duration.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

struct LeaseOptions {
  std::string namespace_name = "kube-system";
  std::string name = "tessera-extender";
  /// Who we are in the lease's holderIdentity; unique per replica.
  std::string identity;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

/// "" when the options are consistent (renew_deadline < lease_duration,
/// retry_period < renew_deadline, all positive, names set), else why not.
std::string LeaseOptionsError(const LeaseOptions& options);

/// hostname_<16 random hex digits>: unique per process, readable by people.
std::string DefaultLeaseIdentity();

/// What the lease said the last time we read or wrote it.
struct LeaseRecord {
  std::string holder;  ///< "" when nobody holds it.
  int64_t lease_duration_seconds = 0;
  std::string acquire_time;  ///< MicroTime, RFC 3339 with microseconds.
  std::string renew_time;
  int64_t transitions = 0;
  std::string resource_version;

  /// What tells a live holder from a dead one: it changes at every renewal.
  [[nodiscard]] bool SameTerm(const LeaseRecord& o) const {
    return holder == o.holder && renew_time == o.renew_time && transitions == o.transitions;
  }
};

class LeaderLease {
 public:
  /// `client` must outlive the lease; `metrics` may be null.
  LeaderLease(ApiClient& client, LeaseOptions options, MetricsRegistry* metrics = nullptr);
  /// Stops the thread (Stop(false)) if it runs.
  ~LeaderLease();
  LeaderLease(const LeaderLease&) = delete;
  LeaderLease& operator=(const LeaderLease&) = delete;

  /// One round at time `now`: takes the lease if it is free, renews it if we
  /// hold it, else notes what the holder last wrote. Called by the thread
  /// every retry_period; tests call it with the times they want.
  /// \return whether we hold the lease after the round; an error when the
  ///   API server could not be asked (we then keep our last renewal, which
  ///   ages out after renew_deadline).
  absl::StatusOr<bool> TryAcquireOrRenew(absl::Time now);
  /// Gives the lease up now if we hold it: the next replica to look takes it.
  absl::Status Release(absl::Time now);

  /// True while we hold the lease and renewed it less than renew_deadline
  /// before `now`. Writers ask this right before each write.
  [[nodiscard]] bool IsLeader(absl::Time now) const;
  [[nodiscard]] bool IsLeader() const { return IsLeader(absl::Now()); }
  /// Who held the lease when we last looked ("" when nobody, or not yet looked).
  [[nodiscard]] std::string LastSeenHolder() const;
  /// When the API server last answered a read of the lease (InfinitePast:
  /// never), by the times TryAcquireOrRenew was given: every replica reads it
  /// each retry period, so a silence longer than the renew deadline means the
  /// API server is down or frozen.
  [[nodiscard]] absl::Time LastContact() const;
  [[nodiscard]] const LeaseOptions& options() const { return options_; }

  /// Runs TryAcquireOrRenew every retry_period on a thread of its own.
  void Start();
  /// Stops that thread; with `release`, gives the lease up if we hold it.
  void Stop(bool release);

 private:
  absl::StatusOr<LeaseRecord> Read(bool* absent);
  absl::StatusOr<bool> Write(const LeaseRecord& record, bool create);
  void Loop();
  void Observe(const LeaseRecord& record, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ApiClient& client_;
  const LeaseOptions options_;
  Gauge* leader_gauge_ = nullptr;
  Counter* acquired_counter_ = nullptr;

  mutable absl::Mutex mu_;
  LeaseRecord observed_ ABSL_GUARDED_BY(mu_);
  absl::Time observed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool holding_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time renewed_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time last_contact_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  std::atomic<bool> stop_{false};
  absl::Mutex wake_mu_;
  std::thread thread_;
};

}  // namespace tessera::k8s
