// What a learned mix is told of the cluster (TargetWorkload::WithCluster):
// its CPU per GPU, host stranding's test of whether CPU is what the cluster
// runs out of, and its GPUs by model, the test of whether a model is scarce
// (policies/fragmentation.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"

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

/// What a learned mix is told of the cluster, summed node by node: the CPU
/// per GPU (AddClusterCpu) and the GPUs by model, each model once in the
/// order first seen (TargetWorkload::scarce_models judges by them). A model
/// is found by hash, so a node list of many distinct model names costs no
/// more than one of a few.
class ClusterSupplySum {
 public:
  void Add(const NodeView& node) {
    AddClusterCpu(node, supply_.cpu_per_gpu);
    for (const GpuDevice& gpu : node.gpus) {
      auto [at, added] = position_.try_emplace(gpu.model, supply_.gpu_models.size());
      if (added) supply_.gpu_models.push_back({.model = gpu.model, .gpus = 0});
      ++supply_.gpu_models[at->second].gpus;
    }
  }
  [[nodiscard]] TargetWorkload::ClusterSupply Take() && { return std::move(supply_); }

 private:
  TargetWorkload::ClusterSupply supply_;
  absl::flat_hash_map<std::string, size_t> position_;
};

}  // namespace tessera
