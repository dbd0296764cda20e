// The cluster's CPU per GPU, as a learned mix carries it
// (TargetWorkload::WithClusterCpu): host stranding's test of whether CPU is
// what the cluster runs out of (policies/fragmentation.h).
#pragma once

#include <cstdint>

#include "scheduler/framework/node_view.h"
#include "scheduler/model/target_workload.h"

namespace tessera {

/// Adds `node` to a sum of the cluster's allocatable milli-CPU and GPUs ×
/// 1000, if its host resources are known (a node that does not report them
/// would count GPUs without their CPU).
inline void AddClusterCpu(const NodeView& node, TargetWorkload::CpuPerGpu& sum) {
  if (node.host == nullptr) return;
  sum.cpu += node.host->cpu_capacity.value();
  sum.gpu += static_cast<int64_t>(node.gpus.size()) * kOneGpu.value();
}

}  // namespace tessera
