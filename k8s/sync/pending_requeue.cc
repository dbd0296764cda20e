#include "k8s/sync/pending_requeue.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "k8s/client/reflector.h"
#include "k8s/internal/json.h"
#include "k8s/pod_record.h"
#include "scheduler/common/log.h"

namespace tessera::k8s {
namespace {

constexpr int kPageSize = 500;

// One page of pods without a node for `scheduler_name`; appends them to
// `out` and returns the continue token ("" on the last page).
absl::StatusOr<std::string> ListPendingPage(ApiClient& client, const std::string& scheduler_name,
                                     const std::string& continue_token, std::vector<PodRef>& out) {
  std::string target = absl::StrCat("/api/v1/pods?limit=", kPageSize, "&fieldSelector=",
                                    QueryEscape(absl::StrCat("spec.nodeName=,spec.schedulerName=", scheduler_name)));
  if (!continue_token.empty()) absl::StrAppend(&target, "&continue=", QueryEscape(continue_token));
  absl::StatusOr<ApiResponse> page = client.Get(target);
  if (!page.ok()) return page.status();
  if (page->status != 200) {
    return absl::UnavailableError(absl::StrCat("GET ", target, ": HTTP ", page->status, ": ", StatusMessage(page->body)));
  }
  simdjson::dom::element root;
  if (auto err = internal::ParseJson(page->body).get(root); err) {
    return absl::DataLossError(absl::StrCat("GET ", target, ": ", simdjson::error_message(err)));
  }
  simdjson::dom::array items;
  if (root["items"].get(items) == simdjson::SUCCESS) {
    for (simdjson::dom::element item : items) {
      absl::StatusOr<PodRecord> pod = DecodePodRecord(item);
      // A pod the watch could not read either: nothing to nudge by name.
      if (!pod.ok() || !pod->node_name.empty()) continue;
      out.push_back(PodRef{pod->namespace_name, pod->name, pod->uid});
    }
  }
  std::string_view next;
  if (root["metadata"]["continue"].get(next) != simdjson::SUCCESS) return std::string();
  return std::string(next);
}

}  // namespace

absl::StatusOr<int> RequeuePendingPods(ApiClient& client, PodApi& pods, const RequeueOptions& options,
                                       absl::Time now) {
  std::vector<PodRef> pending;
  std::string continue_token;
  do {
    absl::StatusOr<std::string> next = ListPendingPage(client, options.scheduler_name, continue_token, pending);
    if (!next.ok()) return next.status();
    continue_token = *std::move(next);
  } while (!continue_token.empty() && pending.size() < static_cast<size_t>(options.max_pods));
  if (pending.size() > static_cast<size_t>(options.max_pods)) pending.resize(static_cast<size_t>(options.max_pods));

  const std::string when = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  int nudged = 0, failed = 0;
  for (const PodRef& pod : pending) {
    if (options.stop != nullptr && options.stop->load()) break;
    const absl::Status written = pods.Annotate(pod, {{std::string(kRequeuedAt), when}});
    if (written.ok()) {
      ++nudged;
    } else if (!absl::IsNotFound(written) && !absl::IsFailedPrecondition(written)) {
      ++failed;  // gone or replaced pods need no nudge; anything else is worth a line
      if (failed == 1) LogWarning(absl::StrCat("requeue: pod ", pod.namespace_name, "/", pod.name, ": ", written.message()));
    }
  }
  if (failed > 1) LogWarning(absl::StrCat("requeue: ", failed, " pods could not be annotated"));
  return nudged;
}

}  // namespace tessera::k8s
