#include "k8s/sync/gpu_capacity.h"

#include <string_view>

#include "k8s/annotations.h"
#include "scheduler/model/quantity_parse.h"

namespace tessera::k8s {
namespace {

std::optional<int64_t> Amount(simdjson::dom::element node, const char* list, std::string_view resource) {
  std::string_view text;
  if (node["status"][list][resource].get(text) != simdjson::SUCCESS) return std::nullopt;
  absl::StatusOr<int64_t> n = ParseCount(text);
  return n.ok() ? std::optional<int64_t>(*n) : std::nullopt;
}

std::optional<int64_t> Agreed(simdjson::dom::element node, std::string_view resource) {
  std::optional<int64_t> capacity = Amount(node, "capacity", resource);
  std::optional<int64_t> allocatable = Amount(node, "allocatable", resource);
  return capacity == allocatable ? capacity : std::nullopt;
}

}  // namespace

GpuCapacity WantedCapacity(const NodeInventory& inventory) {
  GpuCapacity wanted;
  // An unhealthy GPU or one in MIG mode never takes a share (gpu-share), so
  // kube-scheduler must not count it either.
  int64_t healthy = 0;
  int64_t memory = 0;
  bool memory_known = true;
  for (const GpuDevice& gpu : inventory.gpus) {
    if (!gpu.healthy || gpu.mig_mode) continue;
    ++healthy;
    memory += gpu.memory.value();
    memory_known = memory_known && gpu.memory_known();
  }
  if (inventory.gpus.empty()) return wanted;
  wanted.milli = 1000 * healthy;
  if (memory_known) wanted.memory_mib = memory;
  return wanted;
}

GpuCapacity AdvertisedCapacity(simdjson::dom::element node) {
  return {.milli = Agreed(node, kGpuMilliResource), .memory_mib = Agreed(node, kGpuMemoryResource)};
}

}  // namespace tessera::k8s
