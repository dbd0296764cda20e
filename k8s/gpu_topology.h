// A node's GPU topology from its `tessera.io/gpu-topology` annotation.
//
// Two forms, told apart by the first non-blank character ('{' or '[' is JSON):
//
// 1. The text `nvidia-smi topo -m` prints, pasted as it is:
//
//            GPU0    GPU1    GPU2    GPU3    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
//    GPU0     X      NV12    NV12    NV12    PXB     0-47            0               N/A
//    GPU1    NV12     X      NV12    NV12    PXB     0-47            0               N/A
//    ...
//    Legend:
//      X    = Self
//      ...
//
//    The header is the first line whose first word is `GPU<n>`; its GPU
//    columns must be GPU0..GPU<n-1> in order. Every GPU then has one row
//    (`GPU<i>` first); the cells under the GPU columns are read, everything
//    else — NIC columns and rows, CPU/NUMA affinity columns, the legend,
//    blank lines, terminal colour codes — is ignored. Cells: `X` on the
//    diagonal, `NV<n>` (n bonded NVLinks), `PIX`, `PXB`, `PHB`, `NODE`, `SYS`
//    (old drivers' `SOC` reads as SYS). Optional lines `nvlink: <generation>`
//    and `pcie: <generation>` set the link generations (see below).
//
// 2. JSON: a matrix, or an object holding it and optional bandwidths:
//
//    {"links": [["X", 1, 1, 2], [1, "X", 2, 1], [1, 2, "X", 2], [2, 1, 2, "X"]],
//     "nvlink": "2.0", "pcie": "3.0",
//     "bandwidthMBps": {"NVLINK": 25000, "PIX": 16000, "PXB": 14000, "PHB": 12000, "NODE": 10000, "SYS": 8000}}
//
//    Row i, column j is the link from GPU i to GPU j: an integer is a number
//    of NVLinks (≥ 1); a string is any cell of form 1 (so "NV2" = 2); the
//    diagonal is "X" or null. A bare list of rows is the same as {"links": ...}.
//    Other keys of the object are ignored (newer agents may add some).
//
// Bandwidth per direction (LinkBandwidths): NVLink per link by generation
// (1.0: 20000 MB/s; 2.0, 3.0, 4.0: 25000; 5.0: 50000) times the link count;
// PCIe by generation for an x16 link (3.0: 16000; 4.0: 32000; 5.0: 64000;
// 6.0: 128000), the full figure for PIX and 7/8, 3/4, 5/8, 1/2 of it for PXB,
// PHB, NODE, SYS (nominal: each hop further costs bandwidth, and the order is
// what placement needs). Without a generation in the annotation, the GPU model
// of the node's inventory decides (V100: NVLink 2.0 + PCIe 3.0; A100: 3.0 +
// 4.0; H100: 4.0 + 5.0; ...; unknown: 2.0 + 3.0); `bandwidthMBps` overrides
// single kinds in MB/s.
//
// The matrix must be square, at most 16 GPUs, symmetric, with `X` exactly on
// the diagonal; every problem is reported together, e.g.
// `annotation tessera.io/gpu-topology: asymmetric: GPU1-GPU4 is NV2 but GPU4-GPU1 is SYS`.
// A node whose topology is rejected has no topology: it is never taken for
// NVLink-connected.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera::k8s {

/// One NVLink's bandwidth per direction for an NVLink generation ("2.0" or "2").
std::optional<BandwidthMBps> NvlinkBandwidthPerLink(std::string_view generation);

/// The PCIe bandwidths (PIX ... SYS) for a PCIe generation ("4.0" or "4"), the
/// NVLink one left as in `base`.
std::optional<LinkBandwidths> WithPcieGeneration(LinkBandwidths base, std::string_view generation);

/// The bandwidths a node's GPUs have when the annotation names no generation,
/// from the model of its first GPU with one (see the file comment).
LinkBandwidths DefaultLinkBandwidths(absl::Span<const GpuDevice> gpus);

/// Parses either form. `defaults` applies where the annotation names no
/// generation or bandwidth. The topology keeps `annotation` as its source.
/// \return InvalidArgument listing every problem, each prefixed with
///   "annotation tessera.io/gpu-topology: ".
absl::StatusOr<std::shared_ptr<const GpuTopology>> ParseGpuTopology(std::string_view annotation,
                                                                     const LinkBandwidths& defaults);

}  // namespace tessera::k8s
