// The read-only view of one candidate node that plugins see.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"

namespace tessera {

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
  __builtin_prefetch(node.gpus.data());
  __builtin_prefetch(node.usage.data());
}

}  // namespace tessera
