// What a node has (its GPUs) and what pods hold on them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu_vendor.h"
#include "scheduler/model/mig_geometry.h"
#include "scheduler/model/quantity.h"

namespace tessera {

class GpuTopology;  // scheduler/model/gpu_topology.h

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
  /// False when the node's agent found the GPU broken (a critical XID, a
  /// failed row remapping, ...): no pod is placed on it until it is healthy
  /// again. Sources that know nothing of health say healthy.
  bool healthy = true;
  /// In MIG mode the GPU is split into hardware instances (`mig`, placed
  /// without overlap, possibly none yet): pods asking for a share or a whole
  /// GPU never land on it.
  bool mig_mode = false;
  std::vector<MigInstance> mig = {};
  /// In MIG mode without a list of its instances (an inventory that says
  /// only `"migEnabled": true`): they exist but are unknown, so no pod is
  /// placed on them and no re-partitioning is advised there.
  bool mig_unlisted = false;
  /// Who made it: decides the hand-off variables and how devices are named
  /// (scheduler/model/gpu_vendor.h). Pods may select by it.
  GpuVendor vendor = GpuVendor::kNvidia;

  [[nodiscard]] bool memory_known() const { return memory.value() > 0; }
  bool operator==(const GpuDevice&) const = default;
};

/// All GPUs of one node, sorted by `index`, indices unique.
struct NodeInventory {
  InventorySource source = InventorySource::kNone;
  std::vector<GpuDevice> gpus;
  /// How the GPUs are linked (`tessera.io/gpu-topology`); null when unknown.
  /// Immutable and shared by every snapshot and request that sees the node
  /// (so it compares by identity).
  std::shared_ptr<const GpuTopology> topology{};
  /// Why the node's topology annotation was not used (the node then has no
  /// topology); OK when it was used or there is none.
  absl::Status topology_error{};
  /// Why GPUs in MIG mode have their instances unlisted though the inventory
  /// counts them (GPU Feature Discovery's labels on a model or profile
  /// Tessera has no MIG table for); OK otherwise. The node keeps its GPUs.
  absl::Status mig_error{};

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
  /// On a GPU in MIG mode: the instance the pod holds (whole; its compute
  /// and memory above are the instance's, for accounting). None on a shared GPU.
  std::optional<MigInstance> mig = std::nullopt;

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
  /// On a GPU in MIG mode, the instances pods hold, by start slice: bit s
  /// is the instance that starts at slice s (instances never overlap, so a
  /// start names one).
  uint8_t mig_held_starts = 0;

  [[nodiscard]] bool idle() const { return pods == 0; }
  void Add(const GpuShare& s) {
    guaranteed += s.guaranteed;
    limit += s.limit;
    memory += s.memory;
    memory_limit += s.memory_limit;
    ++pods;
    if (s.mig.has_value() && s.mig->start >= 0 && s.mig->start < kMigSlices) {
      mig_held_starts = static_cast<uint8_t>(mig_held_starts | (1u << s.mig->start));
    }
  }
  bool operator==(const GpuUsage&) const = default;
};

/// One GPU as fit and placement read it, packed: the inventory's index and
/// total memory joined with what pods hold on it, in 28 bytes (and, for a GPU
/// in MIG mode, which profiles have a free instance: a MIG pod's filter reads
/// no more than a share pod's). A node's
/// eight GPUs take 3.5 cache lines, where their GpuDevice (with its uuid and
/// model strings) and GpuUsage take 16: filter and prioritize over thousands
/// of nodes wait on memory more than they compute. The fields are 32-bit;
/// the accessors give them back with their units. A sum beyond 2^31 (no
/// GPU comes near) is held as 2^31 − 1, which every fit test still refuses.
class GpuState {
 public:
  GpuState() = default;
  /// \param mig_geometry 0 for a GPU not in MIG mode; else MigGeometryId of
  ///   its model's table. \param mig_free_slots MigFreeProfileSlots.
  GpuState(int32_t index, MemoryMiB memory, const GpuUsage& usage, bool healthy = true, uint8_t mig_geometry = 0,
           uint8_t mig_free_slots = 0)
      : index_(static_cast<uint8_t>(index)),
        healthy_(healthy),
        mig_geometry_(mig_geometry),
        mig_free_slots_(mig_free_slots),
        memory_mib_(Narrow(memory.value())),
        guaranteed_milli_(Narrow(usage.guaranteed.value())),
        limit_milli_(Narrow(usage.limit.value())),
        held_mib_(Narrow(usage.memory.value())),
        held_limit_mib_(Narrow(usage.memory_limit.value())),
        pods_(usage.pods) {}

  /// GpuDevice::index.
  [[nodiscard]] int32_t index() const { return index_; }
  /// GpuDevice::healthy: false, and no pod is placed on it.
  [[nodiscard]] bool healthy() const { return healthy_; }
  /// GpuDevice::mig_mode: split into MIG instances, so no share is placed on it.
  [[nodiscard]] bool mig_mode() const { return mig_geometry_ != 0; }
  /// In MIG mode, its model's table (MigGeometryId; kNoMigGeometry when Tessera has none).
  [[nodiscard]] uint8_t mig_geometry() const { return mig_geometry_; }
  /// In MIG mode, bit p: a free instance of the table's profile p exists.
  [[nodiscard]] uint8_t mig_free_slots() const { return mig_free_slots_; }
  /// Whether a pod asking for a share or whole GPUs may be placed on it.
  [[nodiscard]] bool takes_shares() const { return healthy_ & (mig_geometry_ == 0); }
  /// GpuDevice::memory: total; 0 when unknown.
  [[nodiscard]] MemoryMiB memory() const { return MemoryMiB(memory_mib_); }
  [[nodiscard]] bool memory_known() const { return memory_mib_ > 0; }
  /// What pods hold on it.
  [[nodiscard]] GpuUsage usage() const {
    return GpuUsage{.guaranteed = guaranteed(), .limit = MilliGpu(limit_milli_), .memory = MemoryMiB(held_mib_),
                    .memory_limit = MemoryMiB(held_limit_mib_), .pods = pods_};
  }
  /// Parts of usage(), read alone by the fit test of every GPU of every node.
  [[nodiscard]] MilliGpu guaranteed() const { return MilliGpu(guaranteed_milli_); }
  [[nodiscard]] MilliGpu limit() const { return MilliGpu(limit_milli_); }
  [[nodiscard]] MemoryMiB memory_held() const { return MemoryMiB(held_mib_); }
  [[nodiscard]] MemoryMiB memory_limit_held() const { return MemoryMiB(held_limit_mib_); }
  [[nodiscard]] bool idle() const { return pods_ == 0; }
  /// What pods' guarantees leave free of it, 0..1000 milli-GPU; none where
  /// it takes no shares (unhealthy, or in MIG mode): no share pod can use it.
  [[nodiscard]] int64_t free_milli() const {
    return guaranteed_milli_ >= kOneGpu.value() || !takes_shares() ? 0 : kOneGpu.value() - guaranteed_milli_;
  }

  bool operator==(const GpuState&) const = default;

 private:
  static int32_t Narrow(int64_t v) {
    constexpr int64_t kMax = INT32_MAX;
    return static_cast<int32_t>(v < 0 ? 0 : v > kMax ? kMax : v);
  }

  // The first word: the index, health and the MIG summary, a byte each.
  uint8_t index_ = 0;  // 0..255 (the inventory's range)
  bool healthy_ = true;
  uint8_t mig_geometry_ = 0;
  uint8_t mig_free_slots_ = 0;
  int32_t memory_mib_ = 0;
  int32_t guaranteed_milli_ = 0;
  int32_t limit_milli_ = 0;
  int32_t held_mib_ = 0;
  int32_t held_limit_mib_ = 0;
  int32_t pods_ = 0;
};
static_assert(sizeof(GpuState) == 28);

/// `gpus` joined with `usage_by_index` (indices past its end are idle), in
/// `gpus`' order: what NodeView::gpu_states holds.
inline std::vector<GpuState> JoinGpuStates(absl::Span<const GpuDevice> gpus,
                                           absl::Span<const GpuUsage> usage_by_index) {
  std::vector<GpuState> states;
  states.reserve(gpus.size());
  for (const GpuDevice& g : gpus) {
    const bool held = g.index >= 0 && static_cast<size_t>(g.index) < usage_by_index.size();
    const GpuUsage usage = held ? usage_by_index[static_cast<size_t>(g.index)] : GpuUsage{};
    uint8_t mig_geometry = 0, mig_free_slots = 0;
    if (g.mig_mode) {
      // What a MIG pod's filter asks of every GPU, worked out once per publish.
      const MigGeometry* geometry = FindMigGeometry(g.model);
      mig_geometry = MigGeometryId(geometry);
      if (geometry != nullptr) mig_free_slots = MigFreeProfileSlots(*geometry, g.mig, usage.mig_held_starts);
    }
    states.emplace_back(g.index, g.memory, usage, g.healthy, mig_geometry, mig_free_slots);
  }
  return states;
}

/// How many pods of one shape hold GPUs on a node: a node summary for plugins
/// that keep alike pods together (gpu-clustering).
struct GpuPodShape {
  int32_t gpus = 0;       ///< GPUs each pod holds.
  bool whole_gpu = true;  ///< Each GPU held in full (1000 milli), or a share of it.
  int32_t pods = 0;       ///< Pods of this shape on the node, ≥ 1.

  [[nodiscard]] bool SameShape(const GpuPodShape& o) const { return gpus == o.gpus && whole_gpu == o.whole_gpu; }
  bool operator==(const GpuPodShape&) const = default;
};

/// Counts one pod that holds `shares` into a node's `shapes` (a pod that
/// holds no GPU has no shape). A pod holds whole GPUs when it holds all of each.
inline void CountPodShape(const std::vector<GpuShare>& shares, std::vector<GpuPodShape>& shapes) {
  if (shares.empty()) return;
  GpuPodShape shape{.gpus = static_cast<int32_t>(shares.size()), .whole_gpu = true, .pods = 1};
  for (const GpuShare& s : shares) shape.whole_gpu = shape.whole_gpu && s.guaranteed >= MilliGpu(1000);
  for (GpuPodShape& known : shapes) {
    if (known.SameShape(shape)) {
      ++known.pods;
      return;
    }
  }
  shapes.push_back(shape);
}

}  // namespace tessera
