#include "agent/gpu_probe.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/mig_probe.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {
namespace {

/// A GPU found, with what finding its links needs.
struct Found {
  ProbedGpu gpu;
  nvmlDevice_t handle = nullptr;  ///< null: the GPU is lost
  std::tuple<unsigned int, unsigned int, unsigned int> pci{};  ///< domain, bus, device
};

std::tuple<unsigned int, unsigned int, unsigned int> PciKey(const nvmlPciInfo_t& pci) {
  return {pci.domain, pci.bus, pci.device};
}

GpuLinkKind PcieKind(nvmlGpuTopologyLevel_t level) {
  if (level <= NVML_TOPOLOGY_SINGLE) return GpuLinkKind::kPix;  // INTERNAL (one board) or one switch
  if (level <= NVML_TOPOLOGY_MULTIPLE) return GpuLinkKind::kPxb;
  if (level <= NVML_TOPOLOGY_HOSTBRIDGE) return GpuLinkKind::kPhb;
  if (level <= NVML_TOPOLOGY_NODE) return GpuLinkKind::kNode;
  return GpuLinkKind::kSys;
}

// Why a readable GPU is unhealthy; empty when it is not. Health queries a
// GPU does not support (Unimplemented) say nothing; other failures are noted.
std::string WhyUnhealthy(NvmlLibrary& nvml, nvmlDevice_t handle, const std::string& uuid,
                         const std::map<std::string, std::string>& broken, std::vector<std::string>& notes) {
  if (auto it = broken.find(uuid); it != broken.end()) return it->second;
  absl::StatusOr<RemappedRows> rows = nvml.Remapped(handle);
  if (rows.ok()) {
    if (rows->failure_occurred) {
      return absl::StrCat("row remapping failed (", rows->uncorrectable,
                          " rows remapped for uncorrectable errors): its memory cannot be repaired");
    }
    return "";
  }
  if (rows.status().code() != absl::StatusCode::kUnimplemented) {
    notes.push_back(absl::StrCat(uuid, ": ", rows.status().message()));
    return "";
  }
  absl::StatusOr<bool> pending = nvml.RetiredPagesPending(handle);
  if (pending.ok() && *pending) return "memory pages with errors are pending retirement: the GPU needs a reset";
  if (!pending.ok() && pending.status().code() != absl::StatusCode::kUnimplemented) {
    notes.push_back(absl::StrCat(uuid, ": ", pending.status().message()));
  }
  return "";
}

// MIG mode and, in it, the GPU instances; a note says why they are not listed.
void ReadMig(NvmlLibrary& nvml, nvmlDevice_t handle, ProbedGpu& g, std::vector<std::string>& notes) {
  if (absl::StatusOr<bool> mig = nvml.MigEnabled(handle); mig.ok()) g.mig_enabled = *mig;
  g.device.mig_mode = g.mig_enabled;
  if (!g.mig_enabled) return;
  // Unlisted until read: what Tessera makes of "migEnabled" alone (no
  // shares, no MIG pod placed there).
  g.device.mig_unlisted = true;
  absl::StatusOr<std::vector<MigInstance>> instances = ProbeMigInstances(nvml, handle, g.device.model, g.device.memory);
  if (!instances.ok()) {
    notes.push_back(absl::StrCat(g.device.uuid, ": MIG mode, instances not listed: ", instances.status().message()));
    return;
  }
  g.device.mig = *std::move(instances);
  g.device.mig_unlisted = false;
  g.mig_listed = true;
}

// A GPU that fell off the bus: what the last probe knew of it, unhealthy.
absl::StatusOr<Found> LostGpu(unsigned int index, const absl::Status& why, const NodeGpus* previous) {
  if (previous == nullptr || index >= previous->gpus.size()) {
    return absl::UnavailableError(absl::StrCat("GPU ", index, " cannot be read and was never seen before: ",
                                               why.message()));
  }
  Found found;
  found.gpu = previous->gpus[index];
  found.gpu.device.healthy = false;
  found.gpu.unhealthy_reason = "the GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)";
  return found;
}

absl::StatusOr<Found> ProbeOne(NvmlLibrary& nvml, unsigned int index, const std::map<std::string, std::string>& broken,
                               const NodeGpus* previous, std::vector<std::string>& notes) {
  absl::StatusOr<nvmlDevice_t> handle = nvml.DeviceByIndex(index);
  if (!handle.ok()) return IsGpuLost(handle.status()) ? LostGpu(index, handle.status(), previous) : handle.status();
  absl::StatusOr<std::string> uuid = nvml.Uuid(*handle);
  absl::StatusOr<std::string> name = uuid.ok() ? nvml.Name(*handle) : uuid.status();
  absl::StatusOr<uint64_t> bytes = name.ok() ? nvml.MemoryTotalBytes(*handle) : name.status();
  absl::StatusOr<nvmlPciInfo_t> pci = bytes.ok() ? nvml.PciInfo(*handle) : bytes.status();
  if (!pci.ok()) {
    if (IsGpuLost(pci.status())) return LostGpu(index, pci.status(), previous);
    return absl::Status(pci.status().code(), absl::StrCat("GPU ", index, ": ", pci.status().message()));
  }
  Found found;
  found.handle = *handle;
  found.pci = PciKey(*pci);
  ProbedGpu& g = found.gpu;
  g.device.index = static_cast<int32_t>(index);
  g.device.uuid = *uuid;
  g.device.model = ModelName(*name);
  g.device.memory = MemoryMiB(static_cast<int64_t>(*bytes >> 20));
  g.pci_bus_id = std::string(pci->busId, std::find(pci->busId, pci->busId + sizeof pci->busId, '\0'));
  if (absl::StatusOr<std::optional<int32_t>> numa = nvml.NumaNode(*handle); numa.ok()) {
    g.device.numa = numa->value_or(-1);
  } else if (numa.status().code() != absl::StatusCode::kUnimplemented) {
    notes.push_back(absl::StrCat(g.device.uuid, ": ", numa.status().message()));
  }
  ReadMig(nvml, *handle, g, notes);
  g.unhealthy_reason = WhyUnhealthy(nvml, *handle, g.device.uuid, broken, notes);
  g.device.healthy = g.unhealthy_reason.empty();
  return found;
}

// NVLinks: direct[i][j] links from GPU i to GPU j, and each GPU's links to NVSwitches.
struct NvLinkCounts {
  std::vector<std::vector<int32_t>> direct;
  std::vector<int32_t> to_switch;
};

void CountLinksOf(NvmlLibrary& nvml, size_t i, const std::vector<Found>& found, NvLinkCounts& counts,
                  std::vector<std::string>& notes) {
  const nvmlDevice_t handle = found[i].handle;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    absl::StatusOr<bool> active = nvml.NvLinkActive(handle, link);
    if (!active.ok()) break;  // no NVLink at all, or no link this far: the scan is over
    if (!*active) continue;
    absl::StatusOr<nvmlPciInfo_t> remote = nvml.NvLinkRemotePci(handle, link);
    if (!remote.ok()) {
      notes.push_back(absl::StrCat(found[i].gpu.device.uuid, ": ", remote.status().message()));
      continue;
    }
    const auto peer = std::find_if(found.begin(), found.end(),
                                   [&](const Found& f) { return f.handle != nullptr && f.pci == PciKey(*remote); });
    absl::StatusOr<nvmlIntNvLinkDeviceType_t> type = nvml.NvLinkRemoteType(handle, link);
    // Without the type (drivers before R460), a far end that is no GPU of
    // ours is taken for a switch: NVLink reaches nothing else on x86.
    const bool to_gpu = type.ok() ? *type == NVML_NVLINK_DEVICE_TYPE_GPU : peer != found.end();
    const bool to_switch = type.ok() ? *type == NVML_NVLINK_DEVICE_TYPE_SWITCH : peer == found.end();
    if (to_gpu && peer != found.end()) {
      ++counts.direct[i][static_cast<size_t>(peer - found.begin())];
    } else if (to_switch) {
      ++counts.to_switch[i];
    }
  }
}

std::vector<GpuLink> Links(NvmlLibrary& nvml, const std::vector<Found>& found, std::vector<std::string>& notes) {
  const size_t n = found.size();
  NvLinkCounts counts{.direct = std::vector<std::vector<int32_t>>(n, std::vector<int32_t>(n, 0)),
                      .to_switch = std::vector<int32_t>(n, 0)};
  for (size_t i = 0; i < n; ++i) {
    if (found[i].handle != nullptr) CountLinksOf(nvml, i, found, counts, notes);
  }
  std::vector<GpuLink> links(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      // Both ends must see a link for it to count (a link one side reports
      // down is down); the switch path counts the fewer links of the two.
      int32_t nvlinks = std::min(counts.direct[i][j], counts.direct[j][i]);
      nvlinks += std::min(counts.to_switch[i], counts.to_switch[j]);
      GpuLink link{.kind = GpuLinkKind::kNvLink, .nvlinks = nvlinks};
      if (nvlinks == 0) {
        link = GpuLink{.kind = GpuLinkKind::kSys, .nvlinks = 0};
        if (found[i].handle != nullptr && found[j].handle != nullptr) {
          absl::StatusOr<nvmlGpuTopologyLevel_t> level = nvml.CommonAncestor(found[i].handle, found[j].handle);
          if (level.ok()) {
            link.kind = PcieKind(*level);
          } else {
            notes.push_back(absl::StrCat("GPU ", i, "-GPU ", j, ": ", level.status().message(), "; taken for SYS"));
          }
        }
      }
      links[i * n + j] = links[j * n + i] = link;
    }
  }
  return links;
}

}  // namespace

std::string ModelName(std::string_view nvml_name) {
  return absl::StrReplaceAll(Absl(nvml_name), {{" ", "-"}});
}

absl::StatusOr<NodeGpus> ProbeGpus(NvmlLibrary& nvml, const std::map<std::string, std::string>& broken,
                                   const NodeGpus* previous) {
  absl::StatusOr<unsigned int> count = nvml.DeviceCount();
  if (!count.ok()) return count.status();
  NodeGpus node;
  std::vector<Found> found;
  for (unsigned int i = 0; i < *count; ++i) {
    absl::StatusOr<Found> one = ProbeOne(nvml, i, broken, previous, node.notes);
    if (!one.ok()) return one.status();
    found.push_back(*std::move(one));
  }
  node.links = Links(nvml, found, node.notes);
  for (Found& f : found) node.gpus.push_back(std::move(f.gpu));
  return node;
}

}  // namespace tessera::agent
