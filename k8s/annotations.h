// The names Tessera reads and writes on Kubernetes objects, in one place.
#pragma once

#include <string_view>

namespace tessera::k8s {

inline constexpr std::string_view kTesseraPrefix = "tessera.io/";

// Pod annotations: the request.
inline constexpr std::string_view kGpuCount = "tessera.io/gpu-count";
inline constexpr std::string_view kGpuFraction = "tessera.io/gpu-fraction";
inline constexpr std::string_view kGpuFractionLimit = "tessera.io/gpu-fraction-limit";
inline constexpr std::string_view kGpuMemory = "tessera.io/gpu-memory";
inline constexpr std::string_view kGpuMemoryLimit = "tessera.io/gpu-memory-limit";
inline constexpr std::string_view kGpuModel = "tessera.io/gpu-model";
inline constexpr std::string_view kGpuModelExclude = "tessera.io/gpu-model-exclude";
// The vendors whose GPUs the pod accepts ("amd", "nvidia,amd"; default any).
inline constexpr std::string_view kGpuVendor = "tessera.io/gpu-vendor";
// A MIG instance of this profile ("1g.10gb") instead of GPU shares.
inline constexpr std::string_view kMigProfile = "tessera.io/mig-profile";
// The extended resource users write for a MIG instance (the NVIDIA device
// plugin's "mixed" strategy): nvidia.com/mig-<profile>, e.g. nvidia.com/mig-1g.10gb.
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// Pod annotation: what the pod holds (written by bind; source of truth).
inline constexpr std::string_view kGpuAssignment = "tessera.io/gpu-assignment";
// Pod annotation: the assigned GPUs' UUIDs (or indices when a UUID is
// unknown), comma-separated, for NVIDIA_VISIBLE_DEVICES via the downward API.
inline constexpr std::string_view kVisibleDevices = "tessera.io/visible-devices";

// Pod label: the tenant a pod belongs to (the policy file's `tenants:`); a
// pod without it belongs to the tenant that lists its namespace.
inline constexpr std::string_view kTenantLabel = "tessera.io/tenant";

// Pod label: the pod's task type ("training", "inference"); the policy
// file's `pools:` route pods by it to node pools (docs/concepts/pools.md).
inline constexpr std::string_view kTaskTypeLabel = "tessera.io/task-type";

// Extended resources: GPU use as kube-scheduler, ResourceQuota and preemption
// count it (docs/concepts/extended-resources.md). Integers, as extended
// resources must be; requests = limits.
inline constexpr std::string_view kGpuMilliResource = "tessera.io/gpu-milli";       // 1000 per GPU
inline constexpr std::string_view kGpuMemoryResource = "tessera.io/gpu-memory-mib";  // MiB over all GPUs

// Node: the GPU inventory, in order of precedence.
inline constexpr std::string_view kGpuInventory = "tessera.io/gpu-inventory";
inline constexpr std::string_view kGfdCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGfdProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kGfdMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
// GPU Feature Discovery's MIG labels: the device plugin's strategy ("none",
// "single", "mixed"), and under "mixed" one count per MIG profile,
// nvidia.com/mig-<profile>.count (the prefix is kMigResourcePrefix's).
inline constexpr std::string_view kGfdMigStrategyLabel = "nvidia.com/mig.strategy";
inline constexpr std::string_view kGfdMigCountSuffix = ".count";

// Node labels: the node pool a node belongs to, for the per-pool metrics
// (tessera_pool_*). The first present wins: Tessera's own, then Karpenter's,
// GKE's, EKS's and AKS's. A cluster that names its pools otherwise sets
// tessera.io/node-pool on its nodes. Pools are few, so the label stays bounded.
inline constexpr std::string_view kNodePoolLabels[] = {
    "tessera.io/node-pool",          "karpenter.sh/nodepool",         "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",   "kubernetes.azure.com/agentpool",
};

// Node: how its GPUs are linked (NVLink, PCIe), as JSON or as the text of
// `nvidia-smi topo -m` (k8s/gpu_topology.h).
inline constexpr std::string_view kGpuTopology = "tessera.io/gpu-topology";

}  // namespace tessera::k8s
