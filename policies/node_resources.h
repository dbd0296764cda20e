// What the placement-quality scores (best-fit, dot-product, gpu-packing,
// gpu-clustering, fgd) read of a node and a pod, in the units of the FGD
// paper's simulator: milli-GPU per GPU, milli-CPU, the pod's total GPU ask.
#pragma once

#include <cstdint>

#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu_request.h"

namespace tessera {

/// The sizes the paper's scores normalise by: its largest node, 128 cores
/// and 8 GPUs.
inline constexpr int64_t kMaxSpecCpuMilli = 128000;
inline constexpr int64_t kMaxSpecGpuMilli = 8000;

/// What pods' guarantees leave free of one GPU, 0..1000; none on a GPU that
/// takes no shares (broken, or in MIG mode): no share pod can use it.
inline int64_t FreeMilli(const GpuState& gpu) { return gpu.free_milli(); }

/// Σ FreeMilli over the node's GPUs.
inline int64_t TotalFreeMilli(const NodeView& node) {
  int64_t total = 0;
  for (const GpuState& g : node.gpu_states) total += FreeMilli(g);
  return total;
}

/// The node's free host CPU; 0 when unknown (then the pod's CPU is taken as
/// 0 too: see RequestedCpuMilli), so a score's CPU term drops out.
inline int64_t FreeCpuMilli(const NodeView& node) {
  return node.host == nullptr ? 0 : node.host->cpu_free().value();
}

/// The pod's CPU request as scores weigh it: 0 on a node with unknown host
/// resources.
inline int64_t RequestedCpuMilli(const PodGpuRequest& r, const NodeView& node) {
  return node.host == nullptr ? 0 : r.host.cpu.value();
}

/// milli-GPU the pod takes of each of its GPUs (0 when it asks for none).
inline int64_t PerGpuMilli(const PodGpuRequest& r) {
  if (r.count <= 0) return 0;
  return r.whole_gpu ? kOneGpu.value() : r.guaranteed.value();
}

/// milli-GPU the pod takes in all.
inline int64_t RequestedGpuMilli(const PodGpuRequest& r) { return PerGpuMilli(r) * (r.count > 0 ? r.count : 0); }

/// Whether the pod takes a share of one GPU (not a whole one).
inline bool SharesOneGpu(const PodGpuRequest& r) {
  return r.count == 1 && !r.whole_gpu && r.guaranteed < kOneGpu;
}

}  // namespace tessera
