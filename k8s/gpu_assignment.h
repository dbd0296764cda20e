// The `tessera.io/gpu-assignment` pod annotation: the source of truth for what a pod holds.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// Parses `{"node":"n1","gpus":[{"index":0,"uuid":"GPU-..","milli":250,
/// "limitMilli":800,"memoryMiB":10240,"memoryLimitMiB":20480}]}`.
///
/// node: required, non-empty. gpus: 1..64 items, each with index (required,
/// 0..255, unique), milli (required, 1..1000), limitMilli (milli..1000,
/// default milli), memoryMiB (>= 0, default 0), memoryLimitMiB (>= memoryMiB,
/// default memoryMiB), uuid (optional) and, for a MIG instance, mig
/// ({"profile":"1g.10gb","start":0..7,"uuid":"MIG-..."}, uuid optional).
/// Unknown keys are ignored. Every
/// problem is reported in one InvalidArgument, e.g.
/// `annotation tessera.io/gpu-assignment: gpus[1]: "milli" is required`.
absl::StatusOr<GpuAssignment> ParseGpuAssignment(std::string_view json);

/// The inverse of ParseGpuAssignment (compact JSON, keys in schema order).
/// Every field is written except an empty uuid, so for any assignment that
/// ParseGpuAssignment accepts, ParseGpuAssignment(FormatGpuAssignment(a)) == a.
/// Strings must be valid UTF-8; the output is not validated.
std::string FormatGpuAssignment(const GpuAssignment& assignment);

/// The `tessera.io/visible-devices` value of an assignment: the GPUs' UUIDs,
/// comma-separated, in assignment order, a MIG instance's own UUID for a
/// MIG share; if any UUID is unknown, the GPU indices instead
/// (NVIDIA_VISIBLE_DEVICES accepts either, not a mix). A MIG instance
/// without its UUID (one laid out from GPU Feature Discovery's labels) cannot
/// be named at all: empty, and the bind writes no annotation; the NVIDIA
/// device plugin then hands the container the instance it allocates for the
/// pod's nvidia.com/mig-<profile> resource.
/// Runtimes of other vendors than NVIDIA take the node's device indices
/// (scheduler/model/gpu_vendor.h): `vendor` is the assigned GPUs'.
std::string FormatVisibleDevices(const GpuAssignment& assignment, GpuVendor vendor = GpuVendor::kNvidia);

}  // namespace tessera::k8s
