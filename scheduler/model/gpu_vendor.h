// Who made a GPU, and what each vendor's container runtime reads to know
// which devices a container gets.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tessera {

/// A GPU's vendor, from the node's inventory (NVIDIA when it says none).
enum class GpuVendor : uint8_t {
  kNvidia,
  kAmd,        ///< Instinct (ROCm)
  kIntel,      ///< Data Center GPU Max / Flex (Level Zero)
  kAscend,     ///< Huawei Ascend NPUs
  kCambricon,  ///< Cambricon MLUs
  kHygon,      ///< Hygon DCUs (a HIP runtime)
};

inline constexpr GpuVendor kAllGpuVendors[] = {GpuVendor::kNvidia, GpuVendor::kAmd,       GpuVendor::kIntel,
                                               GpuVendor::kAscend, GpuVendor::kCambricon, GpuVendor::kHygon};

/// "nvidia", "amd", "intel", "ascend", "cambricon", "hygon": the inventory's
/// and the annotations' spelling.
constexpr std::string_view GpuVendorName(GpuVendor vendor) {
  switch (vendor) {
    case GpuVendor::kNvidia: return "nvidia";
    case GpuVendor::kAmd: return "amd";
    case GpuVendor::kIntel: return "intel";
    case GpuVendor::kAscend: return "ascend";
    case GpuVendor::kCambricon: return "cambricon";
    case GpuVendor::kHygon: return "hygon";
  }
  return "nvidia";
}

/// The vendor spelled `name` (GpuVendorName's spelling, exactly); nullopt otherwise.
constexpr std::optional<GpuVendor> ParseGpuVendor(std::string_view name) {
  for (GpuVendor v : kAllGpuVendors) {
    if (GpuVendorName(v) == name) return v;
  }
  return std::nullopt;
}

namespace gpu_vendor_internal {
inline constexpr std::string_view kNvidiaVariables[] = {"NVIDIA_VISIBLE_DEVICES"};
inline constexpr std::string_view kAmdVariables[] = {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"};
inline constexpr std::string_view kIntelVariables[] = {"ZE_AFFINITY_MASK"};
inline constexpr std::string_view kAscendVariables[] = {"ASCEND_VISIBLE_DEVICES"};
inline constexpr std::string_view kCambriconVariables[] = {"MLU_VISIBLE_DEVICES"};
inline constexpr std::string_view kHygonVariables[] = {"HIP_VISIBLE_DEVICES"};
}  // namespace gpu_vendor_internal

/// The environment variables the vendor's container runtime reads for the
/// devices a container gets, each set to tessera.io/visible-devices.
constexpr std::span<const std::string_view> VisibleDevicesVariables(GpuVendor vendor) {
  namespace v = gpu_vendor_internal;
  switch (vendor) {
    case GpuVendor::kNvidia: return v::kNvidiaVariables;
    case GpuVendor::kAmd: return v::kAmdVariables;
    case GpuVendor::kIntel: return v::kIntelVariables;
    case GpuVendor::kAscend: return v::kAscendVariables;
    case GpuVendor::kCambricon: return v::kCambriconVariables;
    case GpuVendor::kHygon: return v::kHygonVariables;
  }
  return v::kNvidiaVariables;
}

/// Whether the vendor's runtime names devices by UUID (NVIDIA: "GPU-...",
/// "MIG-..."); the others' variables take the node's device indices.
constexpr bool NamesDevicesByUuid(GpuVendor vendor) { return vendor == GpuVendor::kNvidia; }

}  // namespace tessera
