// What NVML says about the node's GPUs, as plain data: each GPU's identity,
// memory, NUMA node, MIG mode and health, and how every pair is linked.
//
// Links, as `nvidia-smi topo -m` reports them:
//   - NVLink: every active link of every GPU is followed to its far end
//     (nvmlDeviceGetNvLinkRemotePciInfo_v2). A link to another GPU of the
//     node counts for that pair; a link to an NVSwitch counts for the GPU.
//     A pair then has its direct links plus, when both GPUs reach the
//     switches, the fewer of their switch links (DGX A100: 12 each, so NV12
//     for every pair). Far ends are matched by PCI domain, bus and device.
//   - Otherwise PCIe: nvmlDeviceGetTopologyCommonAncestor's level (one switch:
//     PIX; several: PXB; a host bridge: PHB; a NUMA node: NODE; across: SYS).
//
// Health: a GPU is unhealthy when
//   - the agent saw a critical XID on it since it started (`broken`, from
//     the event loop: xid_watch.h), or
//   - its row remapping failed (Ampere and later: memory that cannot be
//     repaired), or pages with errors wait to be retired (Volta and older,
//     which have no row remapping and keep using the page until a reset), or
//   - it fell off the bus (NVML_ERROR_GPU_IS_LOST): the last probe's facts
//     about it are kept and it is marked unhealthy.
// A remapping that is merely pending is not a fault: NVML says the GPU keeps
// working safely until its next reset.
//
// MIG: a GPU in MIG mode has its GPU instances read (mig_probe.h); when they
// cannot be, or are not what Tessera's MIG table allows, it keeps MIG mode
// without a list and a note says why.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/nvml/nvml_library.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera::agent {

/// One GPU as the agent publishes it.
struct ProbedGpu {
  /// index (NVML's, nvidia-smi's), uuid, model (NVML's name with spaces
  /// turned into dashes, as GPU Feature Discovery writes its product label),
  /// memory (MiB, rounded down), numa (-1: unknown), healthy, and in MIG
  /// mode mig_mode and mig (the instances, when read).
  GpuDevice device;
  std::string unhealthy_reason;  ///< Why `device.healthy` is false; empty when healthy.
  /// MIG mode; `device.mig_mode` says the same, as the inventory parser sets it.
  bool mig_enabled = false;
  /// In MIG mode: whether its GPU instances were read, into `device.mig` (by
  /// start slice). False when they could not be (NodeGpus::notes says why).
  bool mig_listed = false;
  std::string pci_bus_id;        ///< "00000000:07:00.0"

  bool operator==(const ProbedGpu&) const = default;
};

/// Every GPU of the node and how each pair is linked.
struct NodeGpus {
  std::vector<ProbedGpu> gpus;  ///< By index, 0..n-1.
  /// Row-major n x n; the diagonal is unused (a GPU's link to itself).
  std::vector<GpuLink> links;
  /// What could not be read and was left out or assumed (for the log).
  std::vector<std::string> notes;

  [[nodiscard]] const GpuLink& Link(size_t i, size_t j) const { return links[i * gpus.size() + j]; }
};

/// The GFD spelling of an NVML product name: "NVIDIA A100-SXM4-80GB" -> "NVIDIA-A100-SXM4-80GB".
std::string ModelName(std::string_view nvml_name);

/// Reads the node's GPUs.
/// \param broken GPUs the agent found broken since it started, by UUID, with why.
/// \param previous the last probe's answer (or null): what a lost GPU was.
/// \return an error when NVML cannot count the GPUs, or a GPU cannot be read
///   and was never seen before (a lost GPU seen before is reported unhealthy).
absl::StatusOr<NodeGpus> ProbeGpus(NvmlLibrary& nvml, const std::map<std::string, std::string>& broken,
                                   const NodeGpus* previous);

}  // namespace tessera::agent
