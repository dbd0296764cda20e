// Where to re-partition a MIG GPU so that a waiting pod's profile exists.
//
// Tessera never makes or destroys MIG instances (that is the node's: an
// operator, or a MIG manager such as NVIDIA's mig-parted). When pods wait for
// a profile that no free instance has, it says which GPU could get one with
// the least disruption, for whoever acts:
//   1. only healthy GPUs in MIG mode whose model offers the profile and
//      whose inventory lists their instances;
//   2. every valid start of the profile there is a candidate; the instances
//      overlapping its slices are in the way: a free one must be destroyed
//      (no pod notices), a held one means evicting its pod;
//   3. the best candidate evicts the fewest pods, then destroys the fewest
//      free instances, then costs the GPU's remaining geometry least
//      (MigGeometryLoss), then node name, GPU index and start.
// A GPU that has a free instance of the profile needs no re-partitioning
// and is no advice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu.h"

namespace tessera {

/// One re-partitioning that would make an instance of `profile`.
struct MigRepartitionAdvice {
  std::string profile;
  std::string node;
  int32_t gpu_index = 0;
  std::string gpu_uuid = {};
  std::string gpu_model = {};
  int32_t start = 0;  ///< Where the new instance would start.
  /// The free instances to destroy first (their slices overlap).
  std::vector<MigInstance> destroy = {};
  /// Held instances in the way: pods to evict (0 when free slices suffice).
  int32_t pods_to_evict = 0;
  /// What the new instance costs the GPU's remaining geometry (equal weights).
  int64_t geometry_loss = 0;

  bool operator==(const MigRepartitionAdvice&) const = default;
};

/// The least disruptive re-partitioning over `nodes` that makes an instance
/// of `profile`; nullopt when no GPU in MIG mode offers the profile without
/// already having a free instance of it.
std::optional<MigRepartitionAdvice> AdviseMigRepartition(std::string_view profile,
                                                         absl::Span<const NodeView* const> nodes);

}  // namespace tessera
