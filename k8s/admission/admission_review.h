// The admission webhook's wire: an admission.k8s.io/v1 AdmissionReview in,
// the same kind out with the pod's patch (pod_mutation.h) or a refusal.
//
// What the API server sends and expects (Kubernetes' "Dynamic Admission
// Control"): request.uid must be echoed in response.uid; a patch is a base64
// JSON Patch with patchType "JSONPatch"; a refusal is allowed=false with a
// status whose message kubectl prints after "admission webhook ... denied
// the request:". Anything but a CREATE of a v1 Pod is allowed untouched.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "k8s/admission/pod_mutation.h"

namespace tessera::k8s {

/// The AdmissionReview answering `body`.
/// \return InvalidArgument (an HTTP 400 for the server to send) when `body`
///   is not an AdmissionReview v1 with a request and its uid; a pod the
///   webhook refuses is an OK answer saying allowed=false.
absl::StatusOr<std::string> AnswerPodAdmission(std::string_view body, const PodMutationOptions& options);

}  // namespace tessera::k8s
