// The cluster and pods a replay runs on: the trace's as they are, or a mixed
// fleet made from them (`tessera-sim --fleet=mixed`;
// docs/experiments/2026-11-26-mixed-fleet.md), so that placement across vendors and onto MIG
// instances is measured on the trace's scale too.
//
// The mixed fleet is a fixed function of the node and pod lists (of names,
// GPU counts and shares; never of the seed), applied before anything else
// reads them:
//
//  Nodes, by their position i among the nodes with GPUs, in name order:
//   - i % 4 == 3: AMD (a quarter of the GPU nodes): vendor amd, model
//     AMD-Instinct-MI300X; count, CPU and memory as in the trace.
//   - else, when it has 8 GPUs and i % 8 == 1 (about an eighth of the
//     8-GPU nodes; none of the AMD ones): NVIDIA-A100-SXM4-80GB with every
//     GPU in MIG mode, split as the GPU operator's mig-parted config
//     "all-balanced" splits an A100-80GB: 2g.20gb at slice 0, 1g.10gb at 2
//     and 3, 3g.40gb at 4 (Σ compute 7/7). Nothing re-partitions them
//     during a run.
//   - the rest stay as the trace has them (NVIDIA).
//
//  Pods asking for GPUs and naming no model (gpu_spec empty), by
//  h = StableHash(kFleetHashSeed, name):
//   - a share pod (one GPU, gpu_milli < 1000) whose share an instance of
//     the layout covers (≤ 428 milli, 3g's sevenths; 701 of the default
//     trace's 3078 share pods) becomes a MIG pod: it asks for the smallest
//     profile of the layout whose compute covers its share (1g.10gb ≤ 142,
//     2g.20gb ≤ 285, 3g.40gb ≤ 428), as a user whose work fits an instance
//     would, and its gpu_milli becomes that profile's compute
//     (MigComputeOfName: sevenths of 1000, rounded down), which is what it
//     holds. So a MIG pod's arrival and allocation both count its
//     instance's compute, as GpuShare::guaranteed does, and Alloc % counts
//     a GPU in MIG mode as 1000 milli of capacity (a full all-balanced GPU
//     holds 142 + 142 + 285 + 428 = 997).
//   - any other GPU pod with h % 8 == 0 selects vendors = {amd}, with
//     h % 8 == 1 vendors = {nvidia} (an eighth each); the rest accept any.
//   CPU-only pods and pods naming models (the gpuspec traces) are left as
//   they are: a pod naming a trace model fits only the nodes that kept it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/model/mig_geometry.h"
#include "sim/trace.h"

namespace tessera::sim {

enum class Fleet {
  kTrace,  ///< The trace's nodes and pods as they are.
  kMixed,  ///< AMD nodes, MIG nodes, vendor-selecting and MIG pods (above).
};

/// "trace" or "mixed".
absl::StatusOr<Fleet> ParseFleet(std::string_view text);
const char* FleetName(Fleet fleet);

inline constexpr std::string_view kAmdModel = "AMD-Instinct-MI300X";
inline constexpr std::string_view kMigModel = "NVIDIA-A100-SXM4-80GB";
/// Salts the pods' name hash (so that it is not the tenant rule's).
inline constexpr uint64_t kFleetHashSeed = 0x666c656574;  // "fleet"

/// The instances of every MIG GPU of the mixed fleet ("all-balanced").
std::vector<MigInstance> MixedFleetMigLayout();

/// The smallest profile of MixedFleetMigLayout() whose compute covers
/// `gpu_milli`; empty when none does (above 428).
std::string MigProfileCovering(int64_t gpu_milli);

void ApplyFleet(Fleet fleet, std::vector<TraceNode>& nodes);
void ApplyFleet(Fleet fleet, std::vector<TracePod>& pods);

}  // namespace tessera::sim
