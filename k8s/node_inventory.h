// A node's GPU inventory from its annotation, GPU Feature Discovery labels or
// allocatable count, in that order of precedence.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// One GPU Feature Discovery label nvidia.com/mig-<profile>.count: views, as
/// NodeInventoryFields'.
struct GfdMigCount {
  std::string_view profile;  ///< "1g.10gb" (GFD writes a "+" of NVML's name as ".")
  std::string_view count;    ///< the label's value, instances on the node
};

/// A node offers a handful of MIG profiles; more count labels than this are
/// refused (the collectors keep one more, so that the parse can say so).
inline constexpr size_t kMaxGfdMigProfiles = 16;

/// The few fields of a v1.Node the inventory comes from. Views; the caller
/// keeps the strings alive for the call. Members default to absent, so
/// designated initializers may name only the sources a node has.
struct NodeInventoryFields {
  std::optional<std::string_view> inventory_annotation{};  ///< tessera.io/gpu-inventory
  std::optional<std::string_view> gfd_count{};             ///< label nvidia.com/gpu.count
  std::optional<std::string_view> gfd_product{};           ///< label nvidia.com/gpu.product
  std::optional<std::string_view> gfd_memory{};            ///< label nvidia.com/gpu.memory (MiB)
  std::optional<std::string_view> allocatable_gpus{};      ///< status.allocatable["nvidia.com/gpu"]
  std::optional<std::string_view> topology_annotation{};   ///< tessera.io/gpu-topology (k8s/gpu_topology.h)
  std::optional<std::string_view> gfd_mig_strategy{};      ///< label nvidia.com/mig.strategy
  /// Every label nvidia.com/mig-<profile>.count, as AddGfdMigCountLabel
  /// collects them into the caller's list (at most kMaxGfdMigProfiles + 1).
  absl::Span<const GfdMigCount> gfd_mig_counts{};
};

/// When `key` is a label nvidia.com/mig-<profile>.count, adds it to `counts`
/// (while it holds at most kMaxGfdMigProfiles + 1) and returns true; else
/// false. Every reader of a Node's labels (the extender's request, the watch,
/// the cluster file) collects them with it.
bool AddGfdMigCountLabel(std::string_view key, std::string_view value, std::vector<GfdMigCount>& counts);

/// The first source present wins; a malformed source is an InvalidArgument
/// that names it (there is no silent fall-through to a weaker source). A node
/// with no source has an empty inventory (InventorySource::kNone).
///
///  - Annotation: a JSON list of `{"index":0,"uuid":"GPU-..","model":"NVIDIA-A100-SXM4-80GB",
///    "memoryMiB":81920,"numa":0}`; index (0..255, unique), model (non-empty)
///    and memoryMiB (positive) are required, uuid, numa (>= -1) and healthy
///    (a boolean, default true: false keeps every pod off the GPU), vendor
///    (nvidia, amd, intel, ascend, cambricon or hygon; default nvidia) and
///    mig optional, other keys ignored. `"mig":[{"profile":"3g.40gb","start":4,
///    "uuid":"MIG-.."}]` puts the GPU in MIG mode with those instances (`[]`:
///    none yet), checked against the model's MIG table
///    (scheduler/model/mig_geometry.h): a known model, its profiles, valid
///    starts, no overlap. Output sorted by index. Errors name the 0-based
///    item: `annotation tessera.io/gpu-inventory: item 2: "memoryMiB" must be
///    a positive integer`; all items' problems are reported together.
///  - GFD labels: gpu.count GPUs numbered 0..count-1, each with the product
///    (model) and memory (MiB) labels when present. A product, memory or MIG
///    count label without the count label is an error. With
///    nvidia.com/mig.strategy (absent or "none": no MIG) the labels may also
///    count MIG instances (k8s/gfd_mig.h says how they become GPUs in MIG mode):
///     - "single": the product names the profile,
///       "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", and gpu.count counts instances
///       (gpu.memory is an instance's, not read). The GPUs are the fewest
///       that hold them, each in MIG mode, memory unknown. A product ending
///       in "-MIG-INVALID" (GFD found the node's MIG set-up unfit for the
///       strategy) is an error.
///     - "mixed": gpu.count, gpu.product and gpu.memory are the physical
///       GPUs' and each nvidia.com/mig-<profile>.count counts the instances
///       of a profile. GPUs 0..m-1 are put in MIG mode with the instances laid
///       out on them, where m is the fewest GPUs that hold them, or more when
///       allocatable nvidia.com/gpu (the GPUs *not* in MIG mode, for the
///       device plugin) leaves more; counts that no m <= gpu.count hold are an
///       error naming the labels.
///    Labels say how many instances of each profile, not on which GPU or
///    slice: the layout is Tessera's (largest profiles first, each on a free
///    valid start of the table in scheduler/model/mig_geometry.h), right in
///    its counts per profile, not necessarily in its places. Its instances
///    have no uuid, so the bind names no device for them
///    (FormatVisibleDevices) and the NVIDIA device plugin, allocating the
///    pod's nvidia.com/mig-<profile> resource, chooses the instance. A model
///    or profile Tessera has no MIG table for leaves those GPUs in MIG mode
///    with their instances unlisted (no shares, no MIG pod placed there) and
///    says why in NodeInventory::mig_error. More than kMaxGfdMigProfiles
///    count labels, or a count that is not a number, is an error.
///  - Allocatable: that many GPUs of unknown model and memory.
///
/// A present source with a count of 0 is an empty inventory of that source.
/// More than 64 GPUs on one node is an error.
///
/// The topology annotation, when present, fills `topology`. A bad one does not
/// fail the inventory: the node keeps its GPUs, without a topology, and
/// `topology_error` says why. So does a topology that does not cover the
/// inventory (a GPU index past its matrix, or a label/allocatable count that
/// differs from its GPU count: which GPU is missing is then unknown).
///
/// \param previous the node's inventory as parsed before (the cluster
///   snapshot's), or null. When its topology came from the same annotation
///   text and GPU models, that immutable object is shared instead of parsing
///   the text again: a request's full Node objects then cost no topology work.
absl::StatusOr<NodeInventory> ParseNodeInventory(const NodeInventoryFields& fields,
                                                 const NodeInventory* previous = nullptr);

}  // namespace tessera::k8s
