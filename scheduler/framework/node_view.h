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
struct NodeView {
  std::string_view name;
  const NodeInventory* inventory = nullptr;     ///< Never null; no GPUs when unknown.
  const absl::Status* inventory_error = nullptr;///< Never null; not OK when the node's inventory is unparsable.
  absl::Span<const GpuUsage> usage;             ///< Indexed by GPU index; indices past the end are idle.

  /// What pods hold on the GPU with device index `index`.
  [[nodiscard]] GpuUsage UsageOf(int32_t index) const {
    if (index < 0 || static_cast<size_t>(index) >= usage.size()) return GpuUsage{};
    return usage[static_cast<size_t>(index)];
  }
};

}  // namespace tessera
