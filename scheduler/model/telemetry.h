// What a node's GPUs are measured doing (utilisation, memory in use), with
// the time each measurement was taken. gpu.h says what pods *reserved*; this
// says what the GPUs actually do, including work Tessera does not know about.
//
// A measurement is trusted until its sample time plus the source's TTL;
// past that it is stale and readers treat the GPU as unmeasured. Times are
// absolute (not ages), so one immutable value stays correct however long a
// snapshot holding it lives: each reader judges freshness against its own
// clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// Where a node's telemetry came from.
enum class TelemetrySource {
  kPrometheus,  ///< Prometheus queries over the DCGM exporter's metrics.
  kAnnotation,  ///< The node's `tessera.io/gpu-utilization` annotation (a node agent).
};

/// One GPU's measurements. Each value is kUnknown when its source did not
/// report it. One cache line exactly: scoring a node reads the chosen GPUs'
/// entries, one miss each.
struct alignas(64) GpuTelemetry {
  static constexpr int64_t kUnknown = -1;

  int32_t index = 0;                             ///< Device index on the node.
  absl::Time sampled_at = absl::InfinitePast();  ///< When the GPU was measured.
  PerMille utilization{kUnknown};            ///< Short window (default: 1m avg of DCGM_FI_DEV_GPU_UTIL).
  PerMille sustained_utilization{kUnknown};  ///< Long window (default: 5m avg).
  PerMille sm_active{kUnknown};              ///< SM activity (DCGM_FI_PROF_SM_ACTIVE), when profiled.
  MemoryMiB memory_used{kUnknown};           ///< Frame buffer in use, by any process.
  MemoryMiB memory_free{kUnknown};           ///< Frame buffer free.

  bool operator==(const GpuTelemetry&) const = default;
};
static_assert(sizeof(GpuTelemetry) == 64);

/// One node's measurements, from one source.
struct NodeTelemetry {
  /// Sorted by index, indices unique. Inline (no second allocation): a
  /// request reads one node's telemetry from one place, which the node loop
  /// can prefetch (PrefetchNode).
  absl::InlinedVector<GpuTelemetry, 8> gpus;
  /// The TTL: a GPU's values are trusted until sampled_at + stale_after.
  absl::Duration stale_after = absl::Minutes(3);
  TelemetrySource source = TelemetrySource::kPrometheus;
  /// How messages name the two utilisation windows ("1m avg", "5m avg").
  std::string utilization_window;
  std::string sustained_window;

  /// Whether `gpu`'s measurement is still trusted at `now`.
  [[nodiscard]] bool Fresh(const GpuTelemetry& gpu, absl::Time now) const {
    return now <= gpu.sampled_at + stale_after;
  }

  /// The GPU with device index `index`, or null when it was not measured.
  [[nodiscard]] const GpuTelemetry* Find(int32_t index) const {
    // Usually dense (0..n-1): try the direct slot first.
    if (index >= 0 && static_cast<size_t>(index) < gpus.size() && gpus[static_cast<size_t>(index)].index == index) {
      return &gpus[static_cast<size_t>(index)];
    }
    auto it = std::lower_bound(gpus.begin(), gpus.end(), index,
                               [](const GpuTelemetry& g, int32_t i) { return g.index < i; });
    return it != gpus.end() && it->index == index ? &*it : nullptr;
  }
  /// The newest sample time over the GPUs (InfinitePast when none).
  [[nodiscard]] absl::Time newest_sample() const {
    absl::Time t = absl::InfinitePast();
    for (const GpuTelemetry& g : gpus) t = std::max(t, g.sampled_at);
    return t;
  }
  bool operator==(const NodeTelemetry&) const = default;
};

}  // namespace tessera
