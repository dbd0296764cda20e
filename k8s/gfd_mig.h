// GPU Feature Discovery's MIG labels, made into GPUs in MIG mode: which of a
// node's GPUs are split, into which instances (ParseNodeInventory's part for
// nodes without Tessera's inventory annotation).
//
// GFD (NVIDIA/k8s-device-plugin, internal/lm/mig-strategy.go) labels a node
// per the device plugin's MIG strategy:
//  - none: no MIG labels; nvidia.com/mig.strategy is not written.
//  - single: every GPU in MIG mode with instances of one profile. The GPU
//    labels then describe the instances: nvidia.com/gpu.product is
//    "<model>-MIG-<profile>" ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),
//    nvidia.com/gpu.count the instances, nvidia.com/gpu.memory an
//    instance's MiB; "<model>-MIG-INVALID" with count 0 when the node is not
//    set up that way. Without a GPU in MIG mode the labels are the plain ones.
//  - mixed: nvidia.com/gpu.{count,product,memory} are the physical GPUs' (in
//    MIG mode or not), and per profile nvidia.com/mig-<profile>.count,
//    .memory, .product ("<model>-MIG-<profile>"), .slices.gi, .slices.ci,
//    .multiprocessors, .engines.*, .replicas. Only the counts are read here:
//    the profile's table gives the rest.
// Labels count instances per node; which GPU and slice each is on they do not
// say. The layout here is Tessera's (see LayOutGfdMixedStrategy).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "k8s/node_inventory.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// The label nvidia.com/mig.strategy.
enum class GfdMigStrategy { kNone, kSingle, kMixed };

/// Absent or "none", "single", "mixed"; anything else is an InvalidArgument
/// naming the label.
absl::StatusOr<GfdMigStrategy> ParseGfdMigStrategy(std::optional<std::string_view> label);

/// Whether a gpu.product label is strategy single's "<model>-MIG-<profile>".
bool IsGfdMigProduct(std::string_view product);

/// Strategy single: `instances` (the gpu.count label) of the profile that
/// `product` names, on the fewest GPUs of its model that hold them (each
/// spread evenly, in MIG mode, memory unknown). A model or profile without a
/// table: that many GPUs at 7 instances a GPU, their instances unlisted, and
/// `mig_error` says why. InvalidArgument for "-MIG-INVALID" and for more
/// instances than 64 GPUs hold.
absl::StatusOr<NodeInventory> GfdSingleStrategyInventory(std::string_view product, int64_t instances);

/// Strategy mixed: puts GPUs 0..m-1 of `inventory` (the gpu.count GPUs of the
/// gpu.product model) in MIG mode with the instances `counts` give laid out
/// on them. m is the fewest GPUs that hold them, but at least gpu.count −
/// `full_gpus` when that is known (allocatable nvidia.com/gpu: the device
/// plugin offers there only the GPUs not in MIG mode; one unhealthy makes a
/// GPU more in MIG mode, which takes no shares either). Largest profiles
/// first (then those with fewer valid starts), each instance on the least
/// used GPU where it has a free valid start, at the highest such start, so
/// that identical GPUs come out identical; where that fails, on the first
/// GPU. Counts that neither lays out on any m <= gpu.count are an
/// InvalidArgument naming the labels. A model or profile without a MIG table:
/// GPUs 0..m-1 (m = gpu.count − `full_gpus`, else every GPU) in MIG mode with
/// their instances unlisted, and `inventory.mig_error` says why.
absl::Status LayOutGfdMixedStrategy(absl::Span<const GfdMigCount> counts, std::optional<int64_t> full_gpus,
                                    NodeInventory& inventory);

}  // namespace tessera::k8s
