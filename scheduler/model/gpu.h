// What a node has (its GPUs) and what pods hold on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/model/quantity.h"

namespace tessera {

/// Where a node's GPU inventory came from, in order of precedence.
enum class InventorySource {
  kNone,                ///< The node declares no GPUs.
  kAnnotation,          ///< `tessera.io/gpu-inventory` (full detail).
  kFeatureDiscovery,    ///< NVIDIA GPU Feature Discovery labels.
  kAllocatable,         ///< `status.allocatable["nvidia.com/gpu"]`: a count only.
};

/// One physical GPU of a node.
struct GpuDevice {
  int32_t index = 0;        ///< Device index on the node (as nvidia-smi numbers it).
  std::string uuid;         ///< "GPU-..." when known, else empty.
  std::string model;        ///< Product name, e.g. "NVIDIA-A100-SXM4-80GB"; empty if unknown.
  MemoryMiB memory{0};      ///< Total memory; 0 when unknown.
  int32_t numa = -1;        ///< NUMA node, -1 when unknown.

  [[nodiscard]] bool memory_known() const { return memory.value() > 0; }
  bool operator==(const GpuDevice&) const = default;
};

/// All GPUs of one node, sorted by `index`, indices unique.
struct NodeInventory {
  InventorySource source = InventorySource::kNone;
  std::vector<GpuDevice> gpus;

  bool operator==(const NodeInventory&) const = default;
};

/// What one pod holds on one GPU.
struct GpuShare {
  int32_t index = 0;          ///< GPU index on the node.
  std::string uuid;           ///< Optional: when set it must match the device.
  MilliGpu guaranteed{0};     ///< Reserved compute; Σ over pods ≤ 1000.
  MilliGpu limit{0};          ///< Burst limit, ≥ guaranteed; may overcommit up to a cap.
  MemoryMiB memory{0};        ///< Reserved memory.
  MemoryMiB memory_limit{0};  ///< Memory the pod may grow to, ≥ memory.

  bool operator==(const GpuShare&) const = default;
};

/// The `tessera.io/gpu-assignment` annotation: which GPUs of which node a pod holds.
struct GpuAssignment {
  std::string node;
  std::vector<GpuShare> gpus;

  bool operator==(const GpuAssignment&) const = default;
};

/// Sum of what all pods hold on one GPU.
struct GpuUsage {
  MilliGpu guaranteed{0};
  MilliGpu limit{0};
  MemoryMiB memory{0};
  MemoryMiB memory_limit{0};
  int32_t pods = 0;

  [[nodiscard]] bool idle() const { return pods == 0; }
  void Add(const GpuShare& s) {
    guaranteed += s.guaranteed;
    limit += s.limit;
    memory += s.memory;
    memory_limit += s.memory_limit;
    ++pods;
  }
  bool operator==(const GpuUsage&) const = default;
};

}  // namespace tessera
