// What a pod asks for, parsed once from its `tessera.io/*` annotations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/model/gpu_vendor.h"
#include "scheduler/model/host_resources.h"
#include "scheduler/model/quantity.h"

namespace tessera {

/// A pod's GPU request. Per-GPU values apply to each of the `count` GPUs.
///
/// A request without `tessera.io/gpu-fraction` asks for whole GPUs: each of
/// its GPUs must be idle, and it reserves all of it (1000 milli, all memory).
struct PodGpuRequest {
  int32_t count = 1;                 ///< Number of GPUs, ≥ 1; 0 for a pod that asks for none.
  bool whole_gpu = true;             ///< No fraction given: exclusive GPUs.
  MilliGpu guaranteed{1000};         ///< Reserved share of each GPU, 10..1000 in steps of 10.
  MilliGpu limit{1000};              ///< Burst limit of each GPU, guaranteed..1000.
  MemoryMiB memory{0};               ///< Reserved memory per GPU (0: none asked).
  MemoryMiB memory_limit{0};         ///< Memory limit per GPU, ≥ memory (0: = memory).
  std::vector<std::string> models;          ///< Accepted models; empty = any.
  std::vector<std::string> excluded_models; ///< Refused models.
  std::vector<GpuVendor> vendors;           ///< Accepted vendors; empty = any.
  /// A MIG instance of this profile ("1g.10gb") instead of shares: the pod
  /// gets one free instance of a GPU in MIG mode (count 1, whole_gpu; the
  /// share and memory fields hold what the profile's name gives, for
  /// accounting only). Empty for a share or whole-GPU pod.
  std::string mig_profile;
  /// Host CPU and memory; zero asks for nothing. The extender sets the pod's
  /// effective request (k8s/pod_host_request.h), the placement simulator its
  /// trace's. Both pass a pod that asks for no GPU at all with `count` = 0
  /// (extender/service/profile_request.h).
  HostRequest host;
  /// Per-pod randomness for plugins that choose at random (random-score,
  /// gpu-fit's random GPU choice): they hash it with the node, so a pod's
  /// answers are reproducible. 0 when the caller has none. Plugins that do
  /// not randomise ignore it.
  uint64_t salt = 0;

  bool operator==(const PodGpuRequest&) const = default;
};

}  // namespace tessera
