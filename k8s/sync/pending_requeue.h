// After an outage, pods come back fast: the nudge Tessera gives kube-scheduler
// once it is ready again.
//
// While Tessera is down or restarting, kube-scheduler's calls to it fail and
// the pods they were for wait in its unschedulable queue, which it flushes
// every 5 minutes (podMaxInUnschedulablePodsDuration; its flag is deprecated
// and the operator's scheduler flags are not always ours to set). An update
// of the pod itself moves it out of that queue at once, so Tessera, once its
// watch is in sync, writes one annotation on every pod still waiting for its
// scheduler. A second Tessera doing the same at the same moment does no harm:
// the write only says when.
#pragma once

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "k8s/client/pod_api.h"

namespace tessera::k8s {

/// The annotation the nudge writes: when, RFC 3339.
inline constexpr std::string_view kRequeuedAt = "tessera.io/requeued-at";

struct RequeueOptions {
  /// The spec.schedulerName of the pods to nudge.
  std::string scheduler_name;
  /// At most this many pods per call: the nudge is one write per pod.
  int max_pods = 10000;
  /// Set to stop between two pods (shutdown).
  const std::atomic<bool>* stop = nullptr;
};

/// Lists the pods of `options.scheduler_name` that have no node (all pages)
/// and writes kRequeuedAt = `now` on each, with its uid as a precondition. A
/// pod deleted or replaced meanwhile is skipped.
/// \return how many pods were nudged; the listing's error if it failed (the
///   writes' own errors are counted, not returned: one pod's failure must
///   not keep the others waiting).
absl::StatusOr<int> RequeuePendingPods(ApiClient& client, PodApi& pods, const RequeueOptions& options,
                                       absl::Time now);

}  // namespace tessera::k8s
