// What the admission webhook does to a pod that asks for GPUs: one pure
// function from the pod as submitted to the JSON Patch that completes it.
//
// A user asks for GPUs in either currency, and the webhook writes the other:
//  * annotations (tessera.io/gpu-count, gpu-fraction, gpu-memory, ...): the
//    GPU-holding container gets requests = limits of tessera.io/gpu-milli
//    (count × share, 1000 a GPU) and tessera.io/gpu-memory-mib (count × MiB);
//  * those resources written by hand: the annotations are derived from them
//    (a fraction below one GPU, or whole GPUs).
//  * a MIG instance: tessera.io/mig-profile, or the nvidia.com/mig-<profile>
//    resource users write for the NVIDIA device plugin, from which the
//    annotation is derived (one instance per pod). No milli-GPU resources
//    are added for it, and a container holding nvidia.com/mig-<profile> gets
//    no NVIDIA_VISIBLE_DEVICES: the device plugin hands it its instance.
// Both given: they must agree, else the pod is refused saying how. The
// annotations stay the request Tessera places by; the resources are what
// kube-scheduler, ResourceQuota and preemption count (a necessary condition).
//
// It also sets spec.schedulerName when the pod names none or the default
// scheduler, and hands the container its GPUs: NVIDIA_VISIBLE_DEVICES from the
// assignment bind writes (tessera.io/visible-devices, through the downward
// API: the env is resolved when the container starts, after bind), plus the
// limits of the enforcement layer the cluster runs (CUDA MPS or HAMi-core).
// Applying it twice changes nothing the second time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "scheduler/model/gpu_vendor.h"

namespace tessera::k8s {

/// Which layer enforces a pod's share inside the container.
enum class GpuEnforcement {
  kNone,      ///< Only NVIDIA_VISIBLE_DEVICES.
  kMps,       ///< CUDA MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
  kHamiCore,  ///< HAMi-core (libvgpu): CUDA_DEVICE_SM_LIMIT, CUDA_DEVICE_MEMORY_LIMIT.
};

/// "none", "mps", "hami-core"; InvalidArgument otherwise.
absl::StatusOr<GpuEnforcement> ParseGpuEnforcement(std::string_view name);

struct PodMutationOptions {
  /// Set on GPU pods whose spec.schedulerName is empty or "default-scheduler";
  /// a pod that names another scheduler keeps it. Empty: never set.
  std::string scheduler_name = "tessera-scheduler";
  GpuEnforcement enforcement = GpuEnforcement::kNone;
  /// The vendors of the cluster's GPUs: a pod that selects none
  /// (tessera.io/gpu-vendor) gets each one's hand-off variables, as it may
  /// land on any (scheduler/model/gpu_vendor.h); one that selects gets its own.
  std::vector<GpuVendor> vendors = {GpuVendor::kNvidia};
};

/// "nvidia,amd" -> the vendors; InvalidArgument naming an unknown one.
absl::StatusOr<std::vector<GpuVendor>> ParseGpuVendorList(std::string_view names);

/// One RFC 6902 operation.
struct JsonPatchOp {
  std::string op;  ///< "add" or "replace".
  std::string path;
  nlohmann::json value;
};

/// The patch completing `pod` (a Pod object as the API server sends it in an
/// AdmissionReview); empty when the pod asks for no GPU or is complete.
/// \return InvalidArgument, a message for the user, when the GPU request is
///   malformed, resources and annotations disagree, or the resources cannot
///   be written as a request (e.g. 1500 milli: more than one GPU must be
///   whole GPUs).
absl::StatusOr<std::vector<JsonPatchOp>> MutateGpuPod(const nlohmann::json& pod, const PodMutationOptions& options);

/// The operations as a JSON Patch document.
std::string FormatJsonPatch(const std::vector<JsonPatchOp>& ops);

}  // namespace tessera::k8s
