// Stress variants of a trace's cluster and pods, for placement that must
// hold up beyond the published traces (docs/benchmarks.md, "Placement quality"):
//
//  - CPU-scarce nodes: every node's CPU × node_cpu_percent / 100 (GPU nodes
//    short of CPU are common; then CPU, not GPU, often binds).
//  - GPU memory-heavy pods: GPUs get their model's memory (the trace has
//    none; AssumedGpuMemoryMib) and every pod sharing a GPU asks
//    pod_gpu_memory_percent % of 24 GiB per whole GPU of its share (a
//    half-GPU pod at 100 asks 12 GiB), so memory, not compute, fills the
//    16 GiB cards first. Whole-GPU pods hold their cards' memory anyway.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/trace.h"

namespace tessera::sim {

struct StressOptions {
  int64_t node_cpu_percent = 100;     ///< 1..1000.
  int64_t pod_gpu_memory_percent = 0;  ///< 0: GPU memory unknown, as in the trace.
};

/// The GPU memory assumed for an openb model (MiB): the public cards' sizes,
/// and 24 GiB for G1/G2, 32 GiB for G3 (undisclosed models; Alibaba's
/// A10/V100-class fleets); the mixed fleet's MI300X 192 GiB and A100 80 GiB
/// (sim/fleet.h). Unknown models: 16 GiB.
int64_t AssumedGpuMemoryMib(std::string_view model);

/// GPU memory a pod sharing a GPU asks at `percent` (see above), in MiB, rounded up.
int64_t StressGpuMemoryMib(int64_t gpu_milli, int64_t percent);

void ApplyStress(const StressOptions& stress, std::vector<TraceNode>& nodes);
void ApplyStress(const StressOptions& stress, std::vector<TracePod>& pods);

}  // namespace tessera::sim
