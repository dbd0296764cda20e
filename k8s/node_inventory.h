// A node's GPU inventory from its annotation, GPU Feature Discovery labels or
// allocatable count, in that order of precedence.
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

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
};

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
///    (model) and memory (MiB) labels when present. A product or memory label
///    without the count label is an error.
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
