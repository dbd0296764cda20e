// The `tessera.io/gpu-utilization` node annotation: live GPU metrics written
// by a node agent, for clusters without Prometheus.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/model/telemetry.h"

namespace tessera::k8s {

inline constexpr std::string_view kGpuUtilization = "tessera.io/gpu-utilization";

/// Parses
///
///   {"timestamp":"2026-11-21T22:40:12Z", "window":"1m avg", "sustainedWindow":"10m avg",
///    "gpus":[{"index":0, "uuid":"GPU-..", "utilization":97, "sustainedUtilization":88.5,
///             "smActive":0.62, "memoryUsedMiB":30720, "memoryFreeMiB":50176}]}
///
/// timestamp: required, RFC 3339: when the agent measured. gpus: 1..64 items,
/// each with index (required, 0..255, unique) and any of utilization and
/// sustainedUtilization (percent, 0..100), smActive (ratio, 0..1),
/// memoryUsedMiB and memoryFreeMiB (non-negative integers); uuid is optional.
/// window and sustainedWindow name the two utilisation windows in messages
/// (default "current" and "sustained"). Unknown keys are ignored. Every
/// problem is reported in one InvalidArgument, e.g.
/// `annotation tessera.io/gpu-utilization: gpus[1]: "utilization" must be a number in 0..100`.
///
/// \param ttl how long the measurements are trusted (the result's stale_after).
absl::StatusOr<NodeTelemetry> ParseGpuUtilization(std::string_view json, absl::Duration ttl);

}  // namespace tessera::k8s
