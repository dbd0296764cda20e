#include "k8s/sync/cluster_watch.h"

#include "absl/strings/str_cat.h"

namespace tessera::k8s {
namespace {

ReflectorOptions OptionsFor(std::string resource, std::string path, const ClusterWatchOptions& o) {
  ReflectorOptions r;
  r.resource = std::move(resource);
  r.path = std::move(path);
  r.page_size = o.page_size;
  r.watch_timeout = o.watch_timeout;
  r.min_backoff = o.min_backoff;
  r.max_backoff = o.max_backoff;
  return r;
}

}  // namespace

ClusterWatch::ClusterWatch(ApiClient& client, ClusterModel& model, PodDirectory& pods, MetricsRegistry* metrics,
                           ClusterWatchOptions options)
    : node_sink_(model, metrics),
      pod_sink_(model, pods, metrics),
      nodes_(client, node_sink_, OptionsFor("nodes", "/api/v1/nodes", options), metrics),
      // Every pod, not only pending ones: bound pods' annotations are the
      // allocations, and finished pods must free their GPUs.
      pods_(client, pod_sink_, OptionsFor("pods", "/api/v1/pods", options), metrics),
      dra_(client, model, metrics, OptionsFor("", "", options)) {}

ClusterWatch::~ClusterWatch() { Stop(); }

void ClusterWatch::Start() {
  nodes_.Start();
  pods_.Start();
  dra_.Start();
}

void ClusterWatch::Stop() {
  dra_.Stop();
  nodes_.Stop();
  pods_.Stop();
}

bool ClusterWatch::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  if (!nodes_.WaitForSync(timeout) || !pods_.WaitForSync(std::max(absl::ZeroDuration(), deadline - absl::Now()))) {
    return false;
  }
  return dra_.WaitForSync(std::max(absl::ZeroDuration(), deadline - absl::Now()));
}

std::string ClusterWatch::NotInStep() const {
  if (!synced()) return "the initial lists of nodes and pods are not applied yet";
  for (const auto& [resource, reflector] : {std::pair<const char*, const Reflector*>{"node", &nodes_}, {"pod", &pods_}}) {
    if (reflector->in_step()) continue;
    const std::string error = reflector->status().last_error;
    return absl::StrCat("the ", resource, " watch is not following the API server",
                        error.empty() ? "" : absl::StrCat(" (", error, ")"));
  }
  return "";
}

}  // namespace tessera::k8s
