// A node's host CPU and memory capacity, from its status.allocatable.
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/host_resources.h"

namespace tessera::k8s {

/// What kube-scheduler's NodeResourcesFit offers pods on a node: its
/// allocatable cpu (milli-CPU) and memory (MiB), both rounded up as pods'
/// requests are (pod_host_request.h), so that a pod kube-scheduler fits in
/// bytes fits here too. Only the capacity fields are set; the used ones are zero.
///
/// \param cpu, memory status.allocatable["cpu"] and ["memory"]; nullopt when absent.
/// \return nullopt when either is absent (the node's host is then unknown,
///   and no plugin checks or weighs it); InvalidArgument naming the entry
///   and its value when one is not a Kubernetes quantity, e.g.
///   `status.allocatable.cpu="lots": is not a Kubernetes quantity ...`.
absl::StatusOr<std::optional<HostResources>> ParseNodeAllocatable(std::optional<std::string_view> cpu,
                                                                  std::optional<std::string_view> memory);

}  // namespace tessera::k8s
