// The tessera_pool_* gauges: GPU allocation and fragmentation per node pool
// and GPU model (scheduler/cache/pool_usage.h), refreshed from the current
// snapshot before each /metrics scrape.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

/// Publishes UsageByPoolAndModel(snapshot) as gauges labelled {pool, model}.
/// Thread-safe: two scrapes at once refresh one after the other.
class PoolGauges {
 public:
  /// \param metrics where the gauges live; must outlive this.
  explicit PoolGauges(MetricsRegistry& metrics) : metrics_(metrics) {}

  /// Sets every gauge from `snapshot`. A (pool, model) seen before and gone
  /// now reads 0 (the registry keeps series for the process's life; zero is
  /// what the pool holds).
  void Refresh(const ClusterSnapshot& snapshot) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  MetricsRegistry& metrics_;
  absl::Mutex mu_;
  std::set<std::pair<std::string, std::string>> published_ ABSL_GUARDED_BY(mu_);  // (pool, model) set so far
};

}  // namespace tessera
