// How a GPU model splits into MIG instances: its memory slices, the profiles
// it offers, and where each may start.
//
// An A100-80GB in MIG mode has 8 memory slices and 7 compute slices; a
// 3g.40gb instance spans 4 memory slices and may start only at slice 0 or 4,
// a 2g.20gb spans 2 and starts at 0, 2 or 4, a 1g.10gb spans 1 and starts
// anywhere but 7. Which instances can still be made depends on where the
// existing ones sit: two 1g.10gb at slices 1 and 5 leave room for no 3g.40gb
// though six slices are free. These tables are `nvidia-smi mig -lgipp`'s
// placements for each model (NVIDIA's MIG user guide), and the functions
// answer what placement needs: is this start valid, where could an instance
// go, how many more of a profile still fit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// One MIG instance of a GPU in MIG mode (GpuDevice::mig).
struct MigInstance {
  std::string profile;  ///< e.g. "1g.10gb"
  int32_t start = 0;    ///< its first memory slice
  std::string uuid;     ///< "MIG-..." when known, else empty

  bool operator==(const MigInstance&) const = default;
};

/// A GPU's memory slices as bits: bit s is slice s (every MIG GPU has 8).
using SliceMask = uint8_t;

inline constexpr int32_t kMigSlices = 8;

/// One instance size a GPU model offers, e.g. "3g.40gb".
struct MigProfile {
  std::string_view name;
  int32_t compute_slices = 0;  ///< the "3" of 3g: sevenths of the GPU's compute
  int32_t memory_slices = 0;   ///< how many of the 8 slices an instance spans
  SliceMask starts = 0;        ///< bit s: an instance may start at slice s
  MemoryMiB memory{0};         ///< nominal, from the name: "40gb" is 40960 MiB

  /// The slices an instance started at `start` spans.
  [[nodiscard]] constexpr SliceMask SlicesAt(int32_t start) const {
    return static_cast<SliceMask>(((1u << memory_slices) - 1u) << start);
  }
};

/// A GPU model's MIG profiles.
struct MigGeometry {
  std::string_view model;  ///< e.g. "A100-80GB"
  absl::Span<const MigProfile> profiles;

  /// The profile named `name` ("1g.10gb"), or null when this model has none.
  [[nodiscard]] const MigProfile* Find(std::string_view name) const;
};

/// The geometry of the GPU whose product name (as NVML and GPU Feature
/// Discovery spell it: "NVIDIA-A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
/// "NVIDIA-H200") is `product`; null for a model Tessera has no table for
/// (then no MIG placement is made on it rather than a guessed one).
const MigGeometry* FindMigGeometry(std::string_view product);

/// What an instance of the profile named `name` ("3g.40gb") holds, by its
/// name alone (for accounting before a GPU is chosen): its sevenths of the
/// GPU's compute in milli-GPU, rounded down (3g: 428), and the memory the
/// name gives (40 GiB). Zero for a name not spelled <n>g.<m>gb.
MilliGpu MigComputeOfName(std::string_view name);
MemoryMiB MigMemoryOfName(std::string_view name);

/// Every model's geometry Tessera has a table for.
absl::Span<const MigGeometry> AllMigGeometries();

/// Whether an instance of `profile` may be made at `start` on a GPU whose
/// slices `taken` belong to other instances; the error says why not.
absl::Status CheckMigPlacement(const MigProfile& profile, int32_t start, SliceMask taken);

/// Every start where an instance of `profile` could be made beside `taken`.
SliceMask FreeMigStarts(const MigProfile& profile, SliceMask taken);

/// How many more instances of `profile` could be made beside `taken` (the
/// most over every way of placing them, not the first-fit count).
int32_t MaxMoreMigInstances(const MigProfile& profile, SliceMask taken);

/// What taking the slices `add` beside the held slices `held` costs a GPU's
/// geometry: Σ over its profiles of weight × (how many more instances of the
/// profile fit before − after). `weights` in the order of geometry.profiles.
int64_t MigGeometryLoss(const MigGeometry& geometry, absl::Span<const int64_t> weights, SliceMask held,
                        SliceMask add);

/// The slices of a GPU's `instances` that pods hold (`held_starts`: GpuUsage::mig_held_starts).
SliceMask MigHeldSlices(const MigGeometry& geometry, absl::Span<const MigInstance> instances, uint8_t held_starts);

/// A dense id of `geometry` (one of AllMigGeometries()) for GpuState: 1 + its
/// position; kNoMigGeometry for null (MIG mode on a model without a table).
inline constexpr uint8_t kNoMigGeometry = 0xFF;
uint8_t MigGeometryId(const MigGeometry* geometry);
/// The geometry of an id MigGeometryId gave; null for kNoMigGeometry.
const MigGeometry* MigGeometryOfId(uint8_t id);

/// Bit p: some instance of `geometry.profiles[p]` among `instances` is free
/// (its start is not in `held_starts`).
uint8_t MigFreeProfileSlots(const MigGeometry& geometry, absl::Span<const MigInstance> instances,
                            uint8_t held_starts);

}  // namespace tessera
