// The read-only view of one candidate node that plugins see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/host_resources.h"
#include "scheduler/model/telemetry.h"

namespace tessera {

/// One GPU share of a pod whose bind time is known. Measurements taken before
/// `bound_at` cannot show the pod's load yet; a load-aware plugin estimates it.
struct GpuBinding {
  absl::Time bound_at;
  int32_t index = 0;       ///< GPU index on the node.
  MilliGpu guaranteed{0};
  MilliGpu limit{0};
  MemoryMiB memory{0};
  bool operator==(const GpuBinding&) const = default;
};

/// One candidate node as one request sees it: its GPUs (from the request's
/// Node object or from the cluster snapshot) joined with what pods hold on
/// them (always from the snapshot). Everything it points at outlives the request.
///
/// It is a flat value (spans, not pointers to containers) because plugins
/// visit thousands of nodes per request: every indirection saved is a cache
/// miss saved per node.
struct NodeView {
  std::string_view name;
  absl::Span<const GpuDevice> gpus;              ///< Sorted by index; empty when unknown or unreadable.
  const absl::Status* inventory_error = nullptr; ///< Null when the inventory is fine; else why it is unreadable.
  absl::Span<const GpuUsage> usage;              ///< Indexed by GPU index; indices past the end are idle.
  /// `gpus` joined with `usage` (JoinGpuStates): same order, same size. What
  /// fit and placement read per GPU, packed; everything that builds a view
  /// fills it. A snapshot's views point into blocks that pack every node's
  /// (ClusterSnapshot), so a pass over thousands of nodes reads few pages.
  absl::Span<const GpuState> gpu_states = {};
  /// Measured GPU load (scheduler/model/telemetry.h); null when no source reports the node.
  const NodeTelemetry* telemetry = nullptr;
  /// Shares of the pods here whose bind time is known, newest first; each
  /// is also counted in `usage`.
  absl::Span<const GpuBinding> bindings = {};
  /// Host CPU and memory (allocatable, and what bound pods and binds in
  /// flight request); null when unknown (a node without allocatable, a
  /// cluster file), and then no plugin checks or weighs them.
  const HostResources* host = nullptr;
  /// The GPU pods on the node by shape (gpu-clustering keeps alike pods together).
  absl::Span<const GpuPodShape> pod_shapes = {};
  /// How the GPUs are linked, NVLink or PCIe (scheduler/model/gpu_topology.h);
  /// null when unknown. One immutable object per node, shared, never copied.
  const GpuTopology* topology = nullptr;
  /// Why the node's `tessera.io/gpu-topology` annotation was not used; null
  /// when it was, or when there is none.
  const absl::Status* topology_error = nullptr;
  /// Why no GPU pod may be placed here now, whatever its GPUs show: a pod
  /// holds GPUs the model cannot count (an unreadable assignment). Null
  /// normally; the profile refuses GPU pods on the node before any plugin.
  const std::string* gpus_withheld = nullptr;
  /// Identifies the node's state (everything above but telemetry): unique
  /// over the process, renewed whenever the cluster model rebuilds the node,
  /// kept while it does not. 0: not memoisable (a view built from a
  /// request's own Node object). Memoizable plugins' answers depend on no
  /// more than this and the request (ScoreMemo keys on it).
  uint64_t version = 0;

  [[nodiscard]] bool inventory_ok() const { return inventory_error == nullptr; }

  /// What pods hold on the GPU with device index `index`.
  [[nodiscard]] GpuUsage UsageOf(int32_t index) const {
    if (index < 0 || static_cast<size_t>(index) >= usage.size()) return GpuUsage{};
    return usage[static_cast<size_t>(index)];
  }
};

/// Asks the CPU to start loading what a plugin reads first of `node`. Loops
/// over candidates call it a few nodes ahead, so the loads overlap instead of
/// each node stalling on its own cache misses.
inline constexpr size_t kPrefetchDistance = 4;

inline void PrefetchNode(const NodeView& node) {
  // Every cache line of the packed GPU states (8 GPUs: 224 bytes, 4 or 5
  // lines as they fall); the first lines only would leave the rest to stall
  // the plugins.
  constexpr uintptr_t kLine = 64;
  if (!node.gpu_states.empty()) {
    const auto first = reinterpret_cast<uintptr_t>(node.gpu_states.data());
    const uintptr_t last = first + node.gpu_states.size() * sizeof(GpuState) - 1;
    for (uintptr_t line = first & ~(kLine - 1); line <= last; line += kLine) {
      __builtin_prefetch(reinterpret_cast<const void*>(line));
    }
  }
  __builtin_prefetch(node.host);       // null when unknown: a prefetch never faults
  __builtin_prefetch(node.telemetry);  // null when unmeasured
}

}  // namespace tessera
