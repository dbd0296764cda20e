// The `tessera.io/gpu-topology` node annotation (k8s/gpu_topology.h), in both
// forms: `nvidia-smi topo -m` text and JSON.
//
// Input: the annotation; a second field, after a line `---`, is read as an
// NVLink and a PCIe generation, one per line (the parsers behind the
// annotation's `nvlink:` and `pcie:` lines).
#include "fuzz/fuzz_input.h"
#include "k8s/gpu_topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::vector<std::string_view> fields = fuzz::SplitFields(fuzz::AsText(data, size), 2);
  const LinkBandwidths defaults = k8s::DefaultLinkBandwidths({});
  absl::StatusOr<std::shared_ptr<const GpuTopology>> topology = k8s::ParseGpuTopology(fields[0], defaults);
  if (topology.ok() && *topology == nullptr) fuzz::Violated("an accepted topology is null");
  if (fields.size() > 1) {
    const std::vector<std::string_view> generations = fuzz::SplitFields(fields[1], 2);
    (void)k8s::NvlinkBandwidthPerLink(generations[0]);
    if (generations.size() > 1) (void)k8s::WithPcieGeneration(defaults, generations[1]);
  }
  return 0;
}
