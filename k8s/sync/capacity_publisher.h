// Keeps every GPU node's extended resources (tessera.io/gpu-milli,
// tessera.io/gpu-memory-mib in status.capacity and status.allocatable) equal
// to its GPU inventory, so that kube-scheduler's NodeResourcesFit,
// ResourceQuota and DefaultPreemption count GPUs as Tessera does.
//
// The node watch reports what each node should advertise and what it does;
// a node where they differ is patched (status subresource, merge patch) — at
// first sight, when its inventory changes, and again whenever a kubelet
// restart or re-registration drops the resources (the watch then shows
// them gone). Only the writer replica patches (k8s/sync/leader_lease.h); a
// patch repeated by a second replica writes the same values.
//
// Bounded: at most `max_patches_per_round` nodes a round, each failure retried
// after `retry_after`, so a 5000-node cluster's first publish is spread over
// rounds and a failing API server is not hammered.
#pragma once

#include "scheduler/common/periodic_thread.h"

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "k8s/sync/gpu_capacity.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

struct CapacityPublisherOptions {
  int max_patches_per_round = 50;
  absl::Duration round = absl::Seconds(1);
  absl::Duration retry_after = absl::Seconds(10);
};

class CapacityPublisher {
 public:
  /// `client` must outlive the publisher; `is_writer` says whether this
  /// replica may write now; `metrics` may be null.
  CapacityPublisher(ApiClient& client, std::function<bool()> is_writer, MetricsRegistry* metrics,
                    CapacityPublisherOptions options = {});
  ~CapacityPublisher();
  CapacityPublisher(const CapacityPublisher&) = delete;
  CapacityPublisher& operator=(const CapacityPublisher&) = delete;

  /// From the node watch: the node as last seen; nullopt when it is gone.
  void Observe(const std::string& node, std::optional<NodeGpuCapacity> capacity);

  /// One round at `now` (the thread's; tests call it): patches up to
  /// max_patches_per_round nodes whose advertised capacity is not the wanted
  /// one. Nothing when this replica is not the writer.
  /// \return how many nodes were patched.
  int PublishRound(absl::Time now);
  /// Nodes waiting for a patch.
  [[nodiscard]] size_t pending() const;

  void Start();
  void Stop();

 private:
  struct NodeState {
    NodeGpuCapacity capacity;
    absl::Time next_try = absl::InfinitePast();
  };
  absl::Status Patch(const std::string& node, const GpuCapacity& wanted);
  ApiClient& client_;
  const std::function<bool()> is_writer_;
  const CapacityPublisherOptions options_;
  Counter* patched_ = nullptr;
  Counter* failed_ = nullptr;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, NodeState> nodes_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> pending_ ABSL_GUARDED_BY(mu_);  // wanted != advertised

  PeriodicThread thread_;  // last: stopped before what it reads goes
};

}  // namespace tessera::k8s
