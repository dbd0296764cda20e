// The names Tessera reads and writes on Kubernetes objects, in one place.
#pragma once

#include <string_view>

namespace tessera::k8s {

inline constexpr std::string_view kTesseraPrefix = "tessera.io/";

// Pod annotations: the request.
inline constexpr std::string_view kGpuCount = "tessera.io/gpu-count";
inline constexpr std::string_view kGpuFraction = "tessera.io/gpu-fraction";
inline constexpr std::string_view kGpuFractionLimit = "tessera.io/gpu-fraction-limit";
inline constexpr std::string_view kGpuMemory = "tessera.io/gpu-memory";
inline constexpr std::string_view kGpuMemoryLimit = "tessera.io/gpu-memory-limit";
inline constexpr std::string_view kGpuModel = "tessera.io/gpu-model";
inline constexpr std::string_view kGpuModelExclude = "tessera.io/gpu-model-exclude";

// Pod annotation: what the pod holds (written by bind; source of truth).
inline constexpr std::string_view kGpuAssignment = "tessera.io/gpu-assignment";

// Node: the GPU inventory, in order of precedence.
inline constexpr std::string_view kGpuInventory = "tessera.io/gpu-inventory";
inline constexpr std::string_view kGfdCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGfdProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kGfdMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

}  // namespace tessera::k8s
