// The cluster's CPU per GPU, as a learned mix carries it
// (TargetWorkload::WithClusterCpu): host stranding's test of whether CPU is
// what the cluster runs out of (policies/fragmentation.h).
#pragma once

#include <cstdint>

#include "scheduler/framework/node_view.h"
#include "scheduler/model/target_workload.h"

namespace tessera {

/// Adds `node` to a sum of the allocatable milli-CPU and GPUs × 1000 of the
/// nodes with GPUs whose host resources are known. A node without GPUs does
/// not count: its CPU is not where a GPU pod can use it (a cluster rich in
/// CPU-only nodes can still have GPU nodes short of CPU). Nor does a node
/// that does not report its host: it would count GPUs without their CPU.
inline void AddClusterCpu(const NodeView& node, TargetWorkload::CpuPerGpu& sum) {
  if (node.host == nullptr || node.gpus.empty()) return;
  sum.cpu += node.host->cpu_capacity.value();
  sum.gpu += static_cast<int64_t>(node.gpus.size()) * kOneGpu.value();
}

}  // namespace tessera
