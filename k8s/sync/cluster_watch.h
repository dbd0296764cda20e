// Keeps the cluster model in step with the API server: one reflector for
// Nodes and one for Pods, each feeding its sink, and where the API server
// serves DRA the ResourceSlices and ResourceClaims (dra_watch.h).
#pragma once

#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "k8s/client/reflector.h"
#include "k8s/sync/dra_watch.h"
#include "k8s/sync/node_sink.h"
#include "k8s/sync/pod_sink.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

struct ClusterWatchOptions {
  int64_t page_size = 500;
  absl::Duration watch_timeout = absl::Minutes(5);
  absl::Duration min_backoff = absl::Milliseconds(200);
  // 5 s, not client-go's 30 s: the model is stale until the watch is back,
  // and after a 30 s outage a 30 s cap left it so for 22-30 s after the API
  // server served again (ApiServerFaultTest). A refused connect every 5 s costs nothing.
  absl::Duration max_backoff = absl::Seconds(5);
};

class ClusterWatch {
 public:
  /// \param metrics may be null. Nothing runs before Start().
  ClusterWatch(ApiClient& client, ClusterModel& model, PodDirectory& pods, MetricsRegistry* metrics,
               ClusterWatchOptions options = {});
  ~ClusterWatch();  ///< Stop()s.

  void Start();
  void Stop();
  /// Every initial list is applied (nodes, pods, and DRA's where served):
  /// the model is as complete as the API server's state, so answers (and
  /// /readyz) can be trusted.
  [[nodiscard]] bool synced() const { return nodes_.synced() && pods_.synced() && dra_.synced(); }
  bool WaitForSync(absl::Duration timeout);
  /// Empty while the model follows the API server: synced, and the node and
  /// pod watches in step (Reflector::in_step); else why it may not (/readyz
  /// answers it with 503).
  [[nodiscard]] std::string NotInStep() const;
  [[nodiscard]] bool in_step() const { return synced() && nodes_.in_step() && pods_.in_step(); }

  [[nodiscard]] ReflectorStatus node_status() const { return nodes_.status(); }
  [[nodiscard]] ReflectorStatus pod_status() const { return pods_.status(); }
  [[nodiscard]] std::vector<PodProblem> pod_problems() const { return pod_sink_.problems(); }
  [[nodiscard]] DraReport dra_report() const { return dra_.Report(); }
  /// See DraWatch::Resolve: the control loop's once a second.
  void ResolveDra() { dra_.Resolve(); }
  /// See NodeSink::set_utilization_observer; before Start().
  void set_utilization_observer(NodeSink::UtilizationObserver o) { node_sink_.set_utilization_observer(std::move(o)); }
  /// See NodeSink::set_capacity_observer; before Start().
  void set_capacity_observer(NodeSink::CapacityObserver o) { node_sink_.set_capacity_observer(std::move(o)); }

 private:
  NodeSink node_sink_;
  PodSink pod_sink_;
  Reflector nodes_;
  Reflector pods_;
  DraWatch dra_;
};

}  // namespace tessera::k8s
