// What a learned mix is told of the cluster (TargetWorkload::WithCluster):
// its CPU per GPU, host stranding's test of whether CPU is what the cluster
// runs out of, and its GPUs by model, the test of whether a model is scarce
// (policies/fragmentation.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

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

/// Adds `node`'s GPUs to a count of the cluster's GPUs by model (each
/// model once, in the order first seen): what a learned mix judges model
/// scarcity by (TargetWorkload::scarce_models).
inline void AddClusterGpuModels(const NodeView& node, std::vector<TargetWorkload::ModelGpus>& sum) {
  for (const GpuDevice& gpu : node.gpus) {
    auto same = std::find_if(sum.begin(), sum.end(),
                             [&](const TargetWorkload::ModelGpus& m) { return m.model == gpu.model; });
    if (same != sum.end()) {
      ++same->gpus;
    } else {
      sum.push_back({.model = gpu.model, .gpus = 1});
    }
  }
}

/// Both of the above: what a learned mix is told of the cluster.
inline void AddClusterSupply(const NodeView& node, TargetWorkload::ClusterSupply& sum) {
  AddClusterCpu(node, sum.cpu_per_gpu);
  AddClusterGpuModels(node, sum.gpu_models);
}

}  // namespace tessera
