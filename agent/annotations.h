// The node annotations Tessera reads (docs/reference/annotations.md, "What
// nodes have: the GPU inventory", and docs/concepts/topology.md), written from what the probe found. The
// texts are exactly what k8s/node_inventory.h and k8s/gpu_topology.h parse;
// tests read them back through those parsers.
#pragma once

#include <optional>
#include <string>

#include "agent/gpu_probe.h"

namespace tessera::agent {

/// `tessera.io/gpu-inventory`: a JSON list, one object per GPU in index order:
///   {"index":0,"uuid":"GPU-…","model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920,"numa":3,
///    "pciBusId":"00000000:07:00.0"}
/// plus `"healthy":false,"unhealthyReason":"…"` for a broken GPU and
/// `"migEnabled":true` for a GPU in MIG mode, with its instances
/// `"mig":[{"profile":"3g.40gb","start":4,"uuid":"MIG-…"},…]` when they
/// were read (without "mig", the parser takes MIG mode, instances unlisted).
/// numa is left out when unknown. Tessera reads index, uuid, model,
/// memoryMiB, numa, healthy, migEnabled and mig; the other keys are for
/// people reading the node (`kubectl describe node`).
std::string InventoryAnnotation(const NodeGpus& node);

/// `tessera.io/gpu-topology`, the JSON form: {"links":[["X",1,1,2,…],…]}, an
/// NVLink count or the PCIe path ("PIX" … "SYS") per pair, "X" on the
/// diagonal. The link generations are left to the GPU model (the parser's
/// defaults). nullopt when the node has no GPU or more than the parser's 16.
std::optional<std::string> TopologyAnnotation(const NodeGpus& node);

}  // namespace tessera::agent
