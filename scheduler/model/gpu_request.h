// What a pod asks for, parsed once from its `tessera.io/*` annotations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/model/quantity.h"

namespace tessera {

/// A pod's GPU request. Per-GPU values apply to each of the `count` GPUs.
///
/// A request without `tessera.io/gpu-fraction` asks for whole GPUs: each of
/// its GPUs must be idle, and it reserves all of it (1000 milli, all memory).
struct PodGpuRequest {
  int32_t count = 1;                 ///< Number of GPUs, ≥ 1.
  bool whole_gpu = true;             ///< No fraction given: exclusive GPUs.
  MilliGpu guaranteed{1000};         ///< Reserved share of each GPU, 10..1000 in steps of 10.
  MilliGpu limit{1000};              ///< Burst limit of each GPU, guaranteed..1000.
  MemoryMiB memory{0};               ///< Reserved memory per GPU (0: none asked).
  MemoryMiB memory_limit{0};         ///< Memory limit per GPU, ≥ memory (0: = memory).
  std::vector<std::string> models;          ///< Accepted models; empty = any.
  std::vector<std::string> excluded_models; ///< Refused models.

  bool operator==(const PodGpuRequest&) const = default;
};

}  // namespace tessera
