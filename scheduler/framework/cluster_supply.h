// What a learned mix is told of the cluster (TargetWorkload::WithCluster):
// its CPU per GPU, host stranding's test of whether CPU is what the cluster
// runs out of; its GPUs by model, the test of whether a model is scarce
// (policies/fgd/fragmentation.h); and its idle nodes, the test of whether the
// kinds that take whole nodes are short of them (policies/fgd/host_stranding.h).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
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
/// per GPU (AddClusterCpu); the GPUs by model, each model once in the order
/// first seen (TargetWorkload::scarce_models judges by them); the idle nodes
/// (every GPU wholly free, host known) by GPU count, free CPU and model, and
/// the free milli-GPU of every GPU (TargetWorkload::WithIdleNodes). Found
/// by hash: a node list of many distinct models or shapes costs no more
/// than one of a few.
class ClusterSupplySum {
 public:
  void Add(const NodeView& node) {
    AddClusterCpu(node, supply_.cpu_per_gpu);
    for (const GpuDevice& gpu : node.gpus) {
      auto [at, added] = position_.try_emplace(gpu.model, supply_.gpu_models.size());
      if (added) supply_.gpu_models.push_back({.model = gpu.model, .gpus = 0});
      ++supply_.gpu_models[at->second].gpus;
    }
    bool idle = !node.gpu_states.empty();
    for (const GpuState& gpu : node.gpu_states) {
      supply_.free_milli += gpu.free_milli();
      idle = idle && gpu.free_milli() >= kOneGpu.value();
    }
    if (!idle || node.host == nullptr) return;
    const int64_t gpus = static_cast<int64_t>(node.gpu_states.size());
    const int64_t cpu_free = node.host->cpu_free().value();
    const std::string& model = node.gpus[0].model;
    auto [at, added] = idle_position_.try_emplace(std::make_tuple(gpus, cpu_free, model), supply_.idle_nodes.size());
    if (added) supply_.idle_nodes.push_back({.gpus = gpus, .cpu_free = cpu_free, .model = model, .nodes = 0});
    ++supply_.idle_nodes[at->second].nodes;
  }
  [[nodiscard]] TargetWorkload::ClusterSupply Take() && { return std::move(supply_); }

 private:
  TargetWorkload::ClusterSupply supply_;
  absl::flat_hash_map<std::string, size_t> position_;
  absl::flat_hash_map<std::tuple<int64_t, int64_t, std::string>, size_t> idle_position_;
};

}  // namespace tessera
