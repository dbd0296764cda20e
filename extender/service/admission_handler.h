// The mutating admission webhook's HTTP side: POST /mutate-pods with an
// AdmissionReview (k8s/admission/admission_review.h), served on a listener
// of its own over TLS (the API server calls webhooks only over HTTPS).
#pragma once

#include <cstddef>

#include "extender/server/http_server.h"
#include "k8s/admission/pod_mutation.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

/// The path the API server posts to (the chart's clientConfig path).
inline constexpr const char* kMutatePodsPath = "/mutate-pods";
/// Largest AdmissionReview accepted: a pod with its managed fields is tens
/// of KiB; the API server's own limit on an object is 3 MiB.
inline constexpr size_t kAdmissionBodyLimit = size_t{4} << 20;

/// Answers POST /mutate-pods (400 with a JSON reason for a body that is no
/// AdmissionReview), GET /healthz, and 404 / 405 otherwise. Counts each
/// review in tessera_admission_requests_total{result=allowed|patched|denied|bad_request}.
HttpHandler MakeAdmissionHandler(k8s::PodMutationOptions options, MetricsRegistry& metrics);

}  // namespace tessera
