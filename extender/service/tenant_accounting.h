// What operators and chargeback see of each tenant: gauges of its guarantee,
// maximum, use, borrowing and lending; counters of GPU-milli-seconds and
// GPU-memory-MiB-seconds it held; the pods that ran past its maximum run
// time, which it evicts when the tenant says so.
//
// Driven once a second by the control loop (Program::Chore). Use is sampled
// at each tick and held until the next (a rectangle rule over ticks of about
// a second), so a pod that lived less than a tick may be missed or counted a
// tick long: accurate to a second per pod, as chargeback needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/pod_api.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/tenancy/tenant_ledger.h"

namespace tessera {

/// One tenant as of the last tick, for /debug.
struct TenantReport {
  std::string name;
  GpuQuota guaranteed;
  GpuQuota max;
  GpuTotals used;
  GpuTotals borrowed;
  GpuTotals lent;
  bool within_guarantee = true;
  /// Σ over ticks of guaranteed milli-GPU held × seconds (and MiB × seconds).
  int64_t gpu_milli_seconds = 0;
  int64_t gpu_memory_mib_seconds = 0;
  /// "namespace/name" of its pods running longer than its maxRunTime.
  std::vector<std::string> over_max_run_time;
};

class TenantAccountant {
 public:
  /// `api` (may be null: nothing is evicted) evicts pods past their tenant's
  /// maximum run time where the tenant asks for it.
  TenantAccountant(MetricsRegistry& metrics, k8s::PodApi* api);

  /// Accounts what each tenant held since the last tick (a gap of more than
  /// `kMaxStep`, as after a stall, counts as kMaxStep), refreshes the gauges
  /// and the report; evicts overdue pods when `may_evict` (the writer).
  void Tick(const ClusterSnapshot& snapshot, const TenantSet& tenants, absl::Time now, bool may_evict);

  [[nodiscard]] std::vector<TenantReport> Report() const;

  static constexpr absl::Duration kMaxStep = absl::Seconds(10);
  /// After evicting a pod, how long before trying it again (its grace period runs).
  static constexpr absl::Duration kEvictionRetry = absl::Minutes(1);
  /// Evictions per tick at most: a policy change that makes thousands of
  /// pods overdue at once spreads them over ticks.
  static constexpr int kEvictionsPerTick = 10;

 private:
  struct Usage {
    __int128 milli_ms = 0;   // milli-GPU × milliseconds
    __int128 mib_ms = 0;     // MiB × milliseconds
  };
  void SetGauges(const TenantReport& r);
  Counter& RunTimeEvictions(std::string_view result);
  void EvictOverdue(const std::vector<std::pair<PodHolding, std::string>>& overdue, absl::Time now);

  MetricsRegistry& metrics_;
  k8s::PodApi* api_;
  absl::Time last_tick_ = absl::InfinitePast();
  absl::flat_hash_map<std::string, Usage> usage_;       // by tenant name: survives reloads
  absl::flat_hash_map<std::string, absl::Time> evicted_;  // uid -> when (past run time)
  absl::flat_hash_map<std::string, bool> reported_;       // uid -> logged as overdue

  mutable absl::Mutex report_mu_;
  std::vector<TenantReport> report_ ABSL_GUARDED_BY(report_mu_);
};

}  // namespace tessera
