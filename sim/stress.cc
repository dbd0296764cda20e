#include "sim/stress.h"

namespace tessera::sim {

int64_t AssumedGpuMemoryMib(std::string_view model) {
  struct Size {
    std::string_view model;
    int64_t mib;
  };
  static constexpr Size kSizes[] = {
      {"V100M16", 16384}, {"V100M32", 32768}, {"P100", 16384}, {"T4", 16384},
      {"A10", 24576},     {"G1", 24576},      {"G2", 24576},   {"G3", 32768},
      // The mixed fleet's models (sim/fleet.h).
      {"AMD-Instinct-MI300X", 196608}, {"NVIDIA-A100-SXM4-80GB", 81920},
  };
  for (const Size& s : kSizes) {
    if (s.model == model) return s.mib;
  }
  return 16384;
}

int64_t StressGpuMemoryMib(int64_t gpu_milli, int64_t percent) {
  constexpr int64_t kReferenceMib = 24576;  // what a whole GPU's worth of work asks, at 100 %
  return (gpu_milli * kReferenceMib * percent + 100'000 - 1) / 100'000;
}

void ApplyStress(const StressOptions& stress, std::vector<TraceNode>& nodes) {
  for (TraceNode& n : nodes) {
    n.cpu_milli = n.cpu_milli * stress.node_cpu_percent / 100;
    if (stress.pod_gpu_memory_percent > 0 && n.gpus > 0) n.gpu_memory_mib = AssumedGpuMemoryMib(n.model);
  }
}

void ApplyStress(const StressOptions& stress, std::vector<TracePod>& pods) {
  if (stress.pod_gpu_memory_percent == 0) return;
  for (TracePod& p : pods) {
    if (p.gpus > 0 && p.gpu_milli < 1000) p.gpu_memory_mib = StressGpuMemoryMib(p.gpu_milli, stress.pod_gpu_memory_percent);
  }
}

}  // namespace tessera::sim
