// A node's GPU inventory (k8s/node_inventory.h): the inventory annotation, GPU
// Feature Discovery labels, the allocatable count and the topology annotation.
//
// Input: up to six fields separated by lines `---`, in the order of
// NodeInventoryFields (inventory annotation, gpu.count, gpu.product,
// gpu.memory, allocatable nvidia.com/gpu, topology annotation); a missing
// field or one that is exactly `~` is absent.
//
// Property: parsing again with the first result as `previous` (as a request's
// full Node objects are parsed against the snapshot) gives the same inventory.
#include "fuzz/fuzz_input.h"
#include "k8s/node_inventory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::vector<std::string_view> f = fuzz::SplitFields(fuzz::AsText(data, size), 6);
  const k8s::NodeInventoryFields fields{
      .inventory_annotation = fuzz::Optional(f, 0),
      .gfd_count = fuzz::Optional(f, 1),
      .gfd_product = fuzz::Optional(f, 2),
      .gfd_memory = fuzz::Optional(f, 3),
      .allocatable_gpus = fuzz::Optional(f, 4),
      .topology_annotation = fuzz::Optional(f, 5),
  };
  absl::StatusOr<NodeInventory> first = k8s::ParseNodeInventory(fields);
  if (!first.ok()) return 0;
  if (first->gpus.size() > 64) fuzz::Violated("more than 64 GPUs accepted");
  absl::StatusOr<NodeInventory> again = k8s::ParseNodeInventory(fields, &*first);
  if (!again.ok() || again->gpus != first->gpus || again->source != first->source ||
      (again->topology == nullptr) != (first->topology == nullptr)) {
    fuzz::Violated("parsing against the previous inventory changed it");
  }
  return 0;
}
