// A node's GPUs as extended resources (docs/concepts/extended-resources.md):
// what its status should advertise, and what it does.
#pragma once

#include <cstdint>
#include <optional>

#include <simdjson.h>

#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// Amounts of tessera.io/gpu-milli and tessera.io/gpu-memory-mib; nullopt:
/// not advertised.
struct GpuCapacity {
  std::optional<int64_t> milli;
  std::optional<int64_t> memory_mib;

  bool operator==(const GpuCapacity&) const = default;
};

/// One node as the watch saw it: what it should advertise (nullopt: leave
/// it alone, e.g. while its inventory annotation is unreadable) and what it does.
struct NodeGpuCapacity {
  std::optional<GpuCapacity> wanted;
  GpuCapacity advertised;
};

/// What a node with `inventory` should advertise: 1000 milli a healthy GPU
/// and the sum of their memory (nothing for memory when a GPU's memory is
/// unknown). A node without GPUs advertises nothing; one whose GPUs are all
/// unhealthy advertises 0.
GpuCapacity WantedCapacity(const NodeInventory& inventory);

/// What a Node object advertises: each resource when status.capacity and
/// status.allocatable agree on an integer, else nullopt (a kubelet that
/// re-registered and zeroed one of them must be corrected).
GpuCapacity AdvertisedCapacity(simdjson::dom::element node);

}  // namespace tessera::k8s
