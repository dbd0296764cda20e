// A node's GPU inventory from its annotation, GPU Feature Discovery labels or
// allocatable count, in that order of precedence.
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// The few fields of a v1.Node the inventory comes from. Views; the caller
/// keeps the strings alive for the call.
struct NodeInventoryFields {
  std::optional<std::string_view> inventory_annotation;  ///< tessera.io/gpu-inventory
  std::optional<std::string_view> gfd_count;             ///< label nvidia.com/gpu.count
  std::optional<std::string_view> gfd_product;           ///< label nvidia.com/gpu.product
  std::optional<std::string_view> gfd_memory;            ///< label nvidia.com/gpu.memory (MiB)
  std::optional<std::string_view> allocatable_gpus;      ///< status.allocatable["nvidia.com/gpu"]
};

/// The first source present wins; a malformed source is an InvalidArgument
/// that names it (there is no silent fall-through to a weaker source). A node
/// with no source has an empty inventory (InventorySource::kNone).
absl::StatusOr<NodeInventory> ParseNodeInventory(const NodeInventoryFields& fields);

}  // namespace tessera::k8s
