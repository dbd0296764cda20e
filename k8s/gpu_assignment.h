// The `tessera.io/gpu-assignment` pod annotation: the source of truth for what a pod holds.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu.h"

namespace tessera::k8s {

/// Parses `{"node":"n1","gpus":[{"index":0,"uuid":"GPU-..","milli":250,
/// "limitMilli":800,"memoryMiB":10240,"memoryLimitMiB":20480}]}`.
absl::StatusOr<GpuAssignment> ParseGpuAssignment(std::string_view json);

/// The inverse of ParseGpuAssignment (compact JSON, keys in schema order).
std::string FormatGpuAssignment(const GpuAssignment& assignment);

}  // namespace tessera::k8s
