// The `tessera.io/visible-devices` pod annotation read back: which devices a
// pod was handed. The bind writes it beside the assignment (FormatVisibleDevices);
// when the assignment cannot be read, it is what the pod is known to hold.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu.h"
#include "scheduler/model/gpu_request.h"

namespace tessera::k8s {

/// One device the annotation names: a GPU's UUID ("GPU-..."), a MIG
/// instance's ("MIG-...") or a device index (other vendors, or a GPU whose
/// UUID was unknown).
struct VisibleDevice {
  std::string uuid;    ///< Empty when named by index.
  int32_t index = -1;  ///< -1 when named by UUID.
  bool operator==(const VisibleDevice&) const = default;
};

/// At most this many devices, each name at most kMaxVisibleDeviceName bytes:
/// the annotation is anyone's to write.
inline constexpr size_t kMaxVisibleDevices = 64;
inline constexpr size_t kMaxVisibleDeviceName = 128;

/// Parses "GPU-a,GPU-b" or "0,3" (FormatVisibleDevices' output; spaces
/// around names allowed). InvalidArgument naming the annotation and the item
/// for an empty item, an index that is not a small non-negative number, a
/// name with characters no UUID has, a mix of UUIDs and indices, a device
/// named twice, or too many.
absl::StatusOr<std::vector<VisibleDevice>> ParseVisibleDevices(std::string_view text);

/// What a pod on `node` holds when only its visible devices are known: each
/// GPU of `gpus` (the node's inventory) the annotation names, with the share
/// `request` asks per GPU, or the whole GPU and its memory when `request` is
/// null (unknown: counting more is the safe side). FailedPrecondition when a
/// device is not in the inventory or is a MIG instance (which instance of
/// which profile it holds is not written there); the parse's errors as above.
absl::StatusOr<GpuAssignment> AssignmentFromVisibleDevices(std::string_view text, std::string_view node,
                                                           absl::Span<const GpuDevice> gpus,
                                                           const PodGpuRequest* request);

}  // namespace tessera::k8s
