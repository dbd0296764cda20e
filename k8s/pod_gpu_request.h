// A pod's GPU request from its `tessera.io/*` annotations.
#pragma once

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "scheduler/model/gpu_request.h"

namespace tessera::k8s {

/// A pod's annotations (callers may pass only the `tessera.io/` ones).
using Annotations = absl::flat_hash_map<std::string, std::string>;

/// \return nullopt when the pod carries none of the request annotations
///   (Tessera leaves such a pod alone); InvalidArgument naming the annotation
///   and its value when one is malformed or inconsistent, e.g.
///   `tessera.io/gpu-fraction="1.5": must be in (0, 1] or (0%, 100%]`.
absl::StatusOr<std::optional<PodGpuRequest>> ParsePodGpuRequest(const Annotations& annotations);

}  // namespace tessera::k8s
