// A pod's host CPU and memory request, as kube-scheduler counts it.
#pragma once

#include <string_view>

#include <simdjson.h>

#include "absl/status/statusor.h"
#include "scheduler/model/host_resources.h"

namespace tessera::k8s {

/// The CPU and memory kube-scheduler's NodeResourcesFit counts for `pod` (a
/// v1.Pod object): its effective request, computed as kube-scheduler ≥ 1.28
/// does (k8s.io/component-helpers/resource.PodRequests):
///
///   1. Σ spec.containers[].resources.requests: the containers run together.
///   2. Init containers run one at a time before them. A restartable one (a
///      sidecar, `restartPolicy: Always`) keeps running: its request adds to
///      step 1 and to every init container started after it. The pod needs
///      max(step 1, the largest init container with the sidecars before it).
///   3. + spec.overhead (the RuntimeClass's per-pod overhead).
///
/// Each resource is maximised on its own, so CPU and memory may peak in
/// different phases. Before 1.28 there are no sidecars (the API server drops
/// the field), and the rules agree. In-place resize (status.containerStatuses
/// [].allocatedResources, alpha) is not read: spec requests only.
///
/// CPU is in milli-CPU, a finer request rounded up ("0.0001" is 1m), as
/// Quantity.MilliValue does; memory in MiB, each request rounded up to a
/// whole MiB (so the total may exceed kube-scheduler's by < 1 MiB per
/// container). Absent resources, requests, cpu or memory count zero: the API
/// server has already defaulted a missing request to its limit. Other
/// resources (GPUs, ephemeral-storage) are not read.
///
/// \param path prefixes error messages ("Pod", "Pods.items[3]").
/// \return InvalidArgument naming the field and its value when a cpu or
///   memory entry is not a Kubernetes quantity string or a field on the way
///   has the wrong JSON type, e.g.
///   `Pod.spec.containers[1].resources.requests.cpu="two": is not a Kubernetes quantity ...`.
///   Other fields are not validated.
absl::StatusOr<HostRequest> DecodePodHostRequest(simdjson::dom::element pod, std::string_view path = "Pod");

}  // namespace tessera::k8s
