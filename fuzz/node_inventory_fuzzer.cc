// A node's GPU inventory (k8s/node_inventory.h): the inventory annotation, GPU
// Feature Discovery labels, the allocatable count and the topology annotation.
//
// Input: up to eight fields separated by lines `---`, in the order of
// NodeInventoryFields (inventory annotation, gpu.count, gpu.product,
// gpu.memory, allocatable nvidia.com/gpu, topology annotation,
// mig.strategy, then the node's other labels, one `key=value` a line, of
// which GPU Feature Discovery's nvidia.com/mig-<profile>.count are read); a
// missing field or one that is exactly `~` is absent.
//
// Properties: MIG instances laid out from labels pass the MIG table; parsing
// again with the first result as `previous` (as a request's full Node objects
// are parsed against the snapshot) gives the same inventory.
#include <algorithm>

#include "fuzz/fuzz_input.h"
#include "k8s/node_inventory.h"
#include "scheduler/model/mig_geometry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::vector<std::string_view> f = fuzz::SplitFields(fuzz::AsText(data, size), 8);
  k8s::NodeInventoryFields fields{
      .inventory_annotation = fuzz::Optional(f, 0),
      .gfd_count = fuzz::Optional(f, 1),
      .gfd_product = fuzz::Optional(f, 2),
      .gfd_memory = fuzz::Optional(f, 3),
      .allocatable_gpus = fuzz::Optional(f, 4),
      .topology_annotation = fuzz::Optional(f, 5),
      .gfd_mig_strategy = fuzz::Optional(f, 6),
  };
  std::vector<k8s::GfdMigCount> mig_counts;
  for (std::string_view labels = fuzz::Optional(f, 7).value_or(""); !labels.empty();) {
    const std::string_view line = labels.substr(0, labels.find('\n'));
    labels.remove_prefix(std::min(labels.size(), line.size() + 1));
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) k8s::AddGfdMigCountLabel(line.substr(0, eq), line.substr(eq + 1), mig_counts);
  }
  fields.gfd_mig_counts = mig_counts;
  absl::StatusOr<NodeInventory> first = k8s::ParseNodeInventory(fields);
  if (!first.ok()) return 0;
  if (first->gpus.size() > 64) fuzz::Violated("more than 64 GPUs accepted");
  for (const GpuDevice& gpu : first->gpus) {
    // Whatever the labels counted, what is laid out passes the MIG table.
    const MigGeometry* geometry = FindMigGeometry(gpu.model);
    SliceMask taken = 0;
    for (const MigInstance& m : gpu.mig) {
      const MigProfile* p = geometry != nullptr ? geometry->Find(m.profile) : nullptr;
      if (p == nullptr || !CheckMigPlacement(*p, m.start, taken).ok()) fuzz::Violated("a MIG instance off the table");
      taken |= p->SlicesAt(m.start);
    }
  }
  absl::StatusOr<NodeInventory> again = k8s::ParseNodeInventory(fields, &*first);
  if (!again.ok() || again->gpus != first->gpus || again->source != first->source ||
      (again->topology == nullptr) != (first->topology == nullptr)) {
    fuzz::Violated("parsing against the previous inventory changed it");
  }
  return 0;
}
