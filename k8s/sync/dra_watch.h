// Dynamic Resource Allocation beside Tessera: where the API server serves
// resource.k8s.io/v1, a DRA driver may publish a node's GPUs in
// ResourceSlices and kube-scheduler's DynamicResources plugin allocate them
// to ResourceClaims by itself, never asking Tessera. Neither side sees the
// other's use. DraWatch lists and watches both kinds and holds every GPU a
// claim was allocated in the cluster model as a whole-GPU holding (priority
// above any pod's: no preemption takes it), so no share is ever placed on it.
// A device is matched to Tessera's inventory by node (its slice's nodeName)
// and UUID attribute.
//
// On an API server without resource.k8s.io/v1 (Kubernetes before 1.34, or
// the API switched off) nothing is watched and synced() is true at once;
// the discovery is asked again every minute, so an upgraded cluster is seen.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "k8s/client/api_client.h"
#include "k8s/client/reflector.h"
#include "k8s/dra_objects.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::k8s {

/// What /debug shows of DRA.
struct DraReport {
  /// "unknown" (not asked yet, or the API server did not answer), "served",
  /// or "not served" (no resource.k8s.io/v1).
  std::string api = "unknown";
  bool synced = false;
  size_t slices = 0;
  size_t claims = 0;
  /// Nodes in Tessera's inventory with GPUs that a DRA driver's slices also
  /// publish devices of: GPUs two allocators could hand out (docs: say which
  /// manages which).
  std::vector<std::string> shared_nodes;
  /// Each GPU a claim holds: "ns/claim: node GPU i (driver/pool/device)".
  std::vector<std::string> held;
  /// Devices allocated on a node of Tessera's that match none of its GPUs
  /// (no UUID, or one the inventory lacks): Tessera cannot tell which GPU
  /// they are, so cannot keep shares off it.
  std::vector<std::string> unmatched;
};

/// How a claim's device is held in the cluster model: this uid prefix, then
/// the claim's uid and the device's name.
inline constexpr char kDraHoldingPrefix[] = "dra:";

/// What the claims hold on Tessera's nodes, worked out from the slices and
/// claims as they stand and the model's inventories.
struct DraMatch {
  /// A whole-GPU holding for each allocated device matched to a GPU, by uid
  /// (kDraHoldingPrefix, the claim's uid, ":", the device's name).
  absl::btree_map<std::string, PodHolding> holdings;
  /// The report's shared_nodes, held and unmatched (sorted).
  DraReport report;
};
DraMatch MatchDraClaims(const absl::btree_map<std::string, DraSlice>& slices,
                        const absl::btree_map<std::string, DraClaim>& claims, const ClusterSnapshot& snapshot);

class DraWatch {
 public:
  /// \param metrics may be null. Nothing runs before Start().
  DraWatch(ApiClient& client, ClusterModel& model, MetricsRegistry* metrics, const ReflectorOptions& base);
  ~DraWatch();  ///< Stop()s.
  DraWatch(const DraWatch&) = delete;
  DraWatch& operator=(const DraWatch&) = delete;

  void Start();
  void Stop();
  /// Claims can be trusted: both lists are applied, or the API server said
  /// it serves no resource.k8s.io/v1.
  [[nodiscard]] bool synced() const;
  /// Blocks until synced() or `timeout`; \return synced().
  bool WaitForSync(absl::Duration timeout);
  [[nodiscard]] DraReport Report() const;
  /// Matches the claims' devices to the model's inventories again and
  /// updates what claims hold there. Each change of slices or claims does it;
  /// the control loop calls it once a second too, for a node whose inventory
  /// arrived after its claims.
  void Resolve();

 private:
  class Sink;
  void Discover();  // the discovery thread

  ApiClient& client_;
  ClusterModel& model_;
  MetricsRegistry* metrics_;
  const ReflectorOptions base_;
  std::unique_ptr<Sink> slice_sink_;
  std::unique_ptr<Sink> claim_sink_;
  // Made by the discovery thread once the API server serves the group, before
  // reflectors_started_ is set; read by others only after they see it set.
  std::unique_ptr<Reflector> slices_;
  std::unique_ptr<Reflector> claims_;
  std::thread discovery_;
  absl::Notification stopping_;
  absl::Notification answered_;  // the discovery said served or not served
  std::atomic<int> api_{0};  // 0 unknown, 1 served, 2 not served
  std::atomic<bool> reflectors_started_{false};

  mutable absl::Mutex mu_;
  absl::btree_map<std::string, DraSlice> slice_by_name_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, DraClaim> claim_by_uid_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, PodHolding> applied_ ABSL_GUARDED_BY(mu_);  // in the model now, by uid
  DraReport report_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::k8s
