// What the profile sees of a pod on the extender's and the binder's paths.
#pragma once

#include <optional>

#include "scheduler/model/gpu_request.h"
#include "scheduler/model/host_resources.h"

namespace tessera {

/// The pod's GPU request with its host CPU and memory request. A pod that
/// asks for no GPU (`gpu` nullopt) gets `count` 0, as the placement
/// simulator passes CPU-only pods: choosers choose no GPU, filters check
/// only what it asks (host-resources its CPU and memory), and scores that
/// weigh host CPU against GPUs (fgd, host-stranding) steer it away from CPU
/// the GPUs need.
inline PodGpuRequest ProfileRequest(const std::optional<PodGpuRequest>& gpu, HostRequest host) {
  PodGpuRequest request;
  if (gpu.has_value()) {
    request = *gpu;
  } else {
    request.count = 0;
  }
  request.host = host;
  return request;
}

}  // namespace tessera
