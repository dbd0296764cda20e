// A pod's GPU request from its `tessera.io/*` annotations.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "scheduler/model/gpu_request.h"

namespace tessera::k8s {

/// A pod's annotations (callers may pass only the `tessera.io/` ones).
using Annotations = absl::flat_hash_map<std::string, std::string>;

/// Reads the nine request annotations of annotations.h (gpu-count through
/// gpu-model-exclude); other `tessera.io/` keys, such as the assignment, are
/// not a request.
///
///  - gpu-count: integer 1..64, default 1.
///  - gpu-fraction: guaranteed share of each GPU (see ParseGpuFraction).
///    Absent: whole GPUs (whole_gpu, guaranteed = limit = 1000). Present,
///    even "1": a shared request (whole_gpu = false).
///  - gpu-fraction-limit: burst limit, fraction..1, default the fraction;
///    an error without gpu-fraction.
///  - gpu-memory, gpu-memory-limit: Kubernetes quantities per GPU, in MiB
///    rounded up; the limit is memory.., default the memory; an error without
///    gpu-memory.
///  - gpu-model, gpu-model-exclude: comma lists, items trimmed, empty items
///    refused, repeats collapsed; a model in both lists is an error.
///
///  - gpu-vendor: a comma list of vendors (nvidia, amd, intel, ascend,
///    cambricon, hygon) whose GPUs the pod accepts, as gpu-model's list.
///  - mig-profile: a MIG instance of this profile ("1g.10gb", "3g.40gb",
///    "1g.10gb+me") instead of shares: count 1, and no fraction or memory
///    beside it (the profile has its own).
///
/// Every problem is reported, not only the first: the status message joins
/// them with "; " in the order above.
///
/// \return nullopt when the pod carries none of the request annotations
///   (Tessera leaves such a pod alone); InvalidArgument naming the annotation
///   and its value when one is malformed or inconsistent, e.g.
///   `tessera.io/gpu-fraction="1.5": must be in (0, 1] or (0%, 100%]`.
absl::StatusOr<std::optional<PodGpuRequest>> ParsePodGpuRequest(const Annotations& annotations);

/// Whether `name` is spelled as a MIG profile: "<n>g.<m>gb", optionally
/// followed by "+me" or "+gfx" (whether a GPU offers it is the placement's
/// to judge: scheduler/model/mig_geometry.h).
bool IsMigProfileName(std::string_view name);

}  // namespace tessera::k8s
