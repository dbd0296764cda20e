// Pods waiting for a MIG profile, and where re-partitioning would help them:
// what `/debug` lists under "migWaiting" and the tessera_mig_* gauges say.
//
// The waiting pods are those filter refused on every node (RecentRefusals)
// that ask for a MIG instance; the advice is scheduler/cache/mig_repartition.h's
// over the current snapshot, one per profile. Both are worked out when asked
// (a /debug request, a /metrics scrape), never on the filter's path.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "extender/service/recent_refusals.h"
#include "scheduler/cache/mig_repartition.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

/// The pods waiting for one MIG profile.
struct MigWait {
  std::string profile;
  std::vector<std::string> pods;  ///< "namespace/name", most recently refused first.
  /// The least disruptive re-partitioning that makes an instance of the
  /// profile; nullopt when there is none (AdviseMigRepartition).
  std::optional<MigRepartitionAdvice> advice;
};

/// The profiles `refusals` show pods waiting for, in name order, each with
/// its advice over `snapshot`.
std::vector<MigWait> MigWaits(absl::Span<const FilterRefusal> refusals, const ClusterSnapshot& snapshot);

/// Publishes MigWaits as gauges labelled {profile}:
///   tessera_mig_pods_waiting                 pods refused everywhere for want of the profile
///   tessera_mig_repartition_pods_to_evict    what the advice disturbs: 0 when re-partitioning
///                                            free slices and free instances suffices; -1 when
///                                            there is no advice (no GPU in MIG mode offers the
///                                            profile without a free instance of it already)
/// A profile no longer waited for reads 0 and 0. Thread-safe.
class MigAdviceGauges {
 public:
  explicit MigAdviceGauges(MetricsRegistry& metrics) : metrics_(metrics) {}
  void Refresh(const std::vector<MigWait>& waits) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  MetricsRegistry& metrics_;
  absl::Mutex mu_;
  std::set<std::string> published_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
