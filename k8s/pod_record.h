// The fields of a v1.Pod that Tessera's pod cache keeps.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/cache/pod_directory.h"
#include "simdjson.h"

namespace tessera::k8s {

/// Decodes metadata.{uid,name,namespace}, the `tessera.io/` annotations,
/// spec.nodeName, status.phase and the host request (an unreadable one is
/// `host_error`, not an error of the record). A pod without uid or name is an error;
/// `path` prefixes messages.
absl::StatusOr<PodRecord> DecodePodRecord(simdjson::dom::element pod, std::string_view path = "Pod");

/// Succeeded or Failed: the pod's containers are gone and so is its claim on GPUs.
bool IsTerminalPhase(std::string_view phase);

}  // namespace tessera::k8s
