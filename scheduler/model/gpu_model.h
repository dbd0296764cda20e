// Whether a GPU model name matches a pod's accepted-model pattern: what
// gpu-share filters GPUs by (policies/gpu_share/gpu_share.h) and what a workload
// counts model scarcity by (target_workload.h).
#pragma once

#include <string_view>

namespace tessera {

/// True when `model` matches `pattern`: equal ignoring ASCII case, or, when
/// the pattern ends in '*', starting with the rest of it ("NVIDIA-A100*").
bool GpuModelMatches(std::string_view pattern, std::string_view model);

}  // namespace tessera
