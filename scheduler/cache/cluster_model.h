// The writer side of the cluster model: nodes and the pods that hold GPUs.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/cache/cluster_snapshot.h"

namespace tessera {

/// Mutable model; thread-safe. Changes become visible to readers only at
/// Publish(), which returns the new snapshot (Current() returns it too).
/// Writers take one mutex; readers take none: Current() loads an atomic
/// pointer, so a request never waits for a publish in progress.
///
/// A pod's holding is keyed by uid, so a repeated update never counts twice.
/// A pod may name a node the model does not know yet (full-Node requests
/// carry inventories the model never saw); its usage is kept under that name.
class ClusterModel {
 public:
  ClusterModel();

  /// Adds or replaces a node's inventory. `inventory_error` not OK means the
  /// node's inventory source was unparsable (the node then has no GPUs).
  /// `allocatable`: the node's host CPU and memory capacity (its used fields
  /// are ignored); nullopt leaves the node's host unknown. `pool`: the node
  /// pool it belongs to (NodeState::pool), empty when none.
  void UpsertNode(std::string name, NodeInventory inventory, absl::Status inventory_error,
                  std::optional<HostResources> allocatable = std::nullopt, std::string pool = {});
  void RemoveNode(std::string_view name);

  /// Adds or replaces what a bound pod holds (by uid): `pod.host` on the
  /// node's host, whatever GPUs its assignment lists (none for a pod that
  /// asks for no GPU). Every pod bound to a node and not finished belongs
  /// here, GPU or not: the node's host counts them all.
  ///
  /// The pod as the API server records it supersedes a bind in flight for
  /// it: its host request at once; its GPUs when it lists some or the bind
  /// reserved none (a bound pod without a readable assignment leaves the
  /// reserved GPUs counted until the reservation ends).
  ///
  /// A pod whose holding is unknown (`pod.unknown_holding`, no GPUs listed)
  /// and that no reservation accounts for withholds its node: the node's
  /// view refuses GPU pods (NodeView::gpus_withheld) and Reserve refuses
  /// GPUs there, until the pod is updated with a readable holding or removed.
  void UpsertPod(PodHolding pod);
  /// Forgets the pod: its GPUs and its host request.
  void RemovePod(std::string_view uid);

  /// Counts `pod`'s GPUs and host request from now on, before the API
  /// server has recorded them: a bind in flight. (A host request the watch
  /// already counts for the pod is not counted again.) The reservation ends when the watch shows the
  /// pod itself (UpsertPod with the same uid confirms it), at
  /// ReleaseReservation (the bind failed, the pod is gone), or when
  /// ExpireReservations finds it past `expires_at`. A second reservation for
  /// the same uid replaces the first, so a pod never holds twice.
  ///
  /// The model guards capacity itself, whatever policy chose the GPUs: a
  /// reservation that would take a GPU past 1000 milli guaranteed or past
  /// its memory (where known), or that names a GPU the node's inventory does
  /// not list, is refused and reserves nothing (the first reservation of the
  /// same uid, if any, stays).
  /// \return ResourceExhausted (over capacity) or FailedPrecondition (no such
  ///   GPU), naming the node, the GPU and the numbers.
  absl::Status Reserve(PodHolding pod, absl::Time expires_at);
  /// Moves the expiry of the reservation of `uid` to `expires_at`, its GPUs
  /// as they are (no snapshot changes); false when it has none.
  bool ExtendReservation(std::string_view uid, absl::Time expires_at);
  /// \return whether `uid` had a reservation.
  bool ReleaseReservation(std::string_view uid);
  /// Drops reservations that expired before `now`; returns them.
  std::vector<PodHolding> ExpireReservations(absl::Time now);
  /// The reservation for `uid`, if any.
  [[nodiscard]] std::optional<PodHolding> FindReservation(std::string_view uid) const;
  /// The confirmed holding (from the watch) of `uid`, if any.
  [[nodiscard]] std::optional<PodHolding> FindPod(std::string_view uid) const;
  [[nodiscard]] size_t reservation_count() const;

  /// Replaces the live GPU metrics of node `name`; null removes them. Kept
  /// apart from the node's inventory and pods, so a refresh of every node
  /// every few seconds swaps one pointer per node and copies no pod list.
  /// Telemetry may name a node the model does not know (yet): it applies
  /// from the publish at which the node appears.
  void SetNodeTelemetry(std::string name, std::shared_ptr<const NodeTelemetry> telemetry);

  /// Publishes every change since the last publish as a new snapshot.
  std::shared_ptr<const ClusterSnapshot> Publish();
  /// The last published snapshot (never null; empty before the first
  /// publish). Takes no lock: it never waits for a writer, even one that is
  /// building the next snapshot.
  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Current() const;

 private:
  struct NodeEntry {
    bool known = false;  // has an inventory (not just pods naming it)
    NodeInventory inventory;
    absl::Status inventory_error;
    std::optional<HostResources> allocatable;  // capacity only; nullopt: unknown
    std::string pool;
    HostRequest host_used;   // Σ host requests of the confirmed pods here (host_of_pod_)
    int64_t host_pods = 0;   // how many: the entry stays while any is here
    absl::btree_map<std::string, PodHolding> pods;  // by uid
    absl::btree_map<std::string, PodHolding> reserved;  // binds in flight, by uid
  };
  struct Reservation {
    std::string node;
    absl::Time expires_at;
  };
  struct PodHost {
    std::string node;
    HostRequest request;
  };

  void DropReservation(std::string_view uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `pod`'s shares fit on its node next to what every other pod
  // holds or has reserved there (Reserve's guard).
  absl::Status CheckCapacity(const PodHolding& pod) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The reservation's holding of `uid`; null when it has none.
  PodHolding* ReservedHolding(std::string_view uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts `request` of pod `uid` on `node`'s host, instead of what it counted before.
  void CountHost(const std::string& uid, const std::string& node, HostRequest request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UncountHost(std::string_view uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops what the watch said `uid` holds on GPUs.
  void UncountGpus(std::string_view uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseIfEmpty(absl::btree_map<std::string, NodeEntry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void MarkDirty(const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Points `next`'s views at the telemetry in force (only where it may have
  // changed when `next` keeps `prev`'s node order).
  void AttachTelemetry(ClusterSnapshot& next, const ClusterSnapshot& prev) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::shared_ptr<const NodeState> Build(const std::string& name, const NodeEntry& e);
  // Publish, the node set unchanged: `next` is `prev` with the dirty nodes rebuilt.
  void RebuildChangedNodes(ClusterSnapshot& next, const ClusterSnapshot& prev) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publish after nodes came or went: `next` holds every node, `prev`'s
  // states kept where the node is not dirty.
  void RebuildNodeSet(ClusterSnapshot& next, const ClusterSnapshot& prev) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lays the GPU states of block `block`'s nodes out anew from their
  // NodeStates, or from `prev`'s copy of the block patched where a node
  // changed (ClusterSnapshot::gpu_state_blocks_), and points their views there.
  static void LayOutGpuStateBlock(ClusterSnapshot& s, size_t block, const ClusterSnapshot* prev);
  // Nodes of one kind of machine publish the same topology annotation: they
  // share one object (same text, same bandwidths), so a request over
  // thousands of nodes reads a few topologies that stay in cache.
  std::shared_ptr<const GpuTopology> InternTopology(std::shared_ptr<const GpuTopology> topology)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::btree_map<std::string, NodeEntry> nodes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> node_of_pod_ ABSL_GUARDED_BY(mu_);  // GPU holders
  absl::flat_hash_map<std::string, PodHost> host_of_pod_ ABSL_GUARDED_BY(mu_);  // every confirmed pod
  absl::flat_hash_map<std::string, Reservation> reservations_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const NodeTelemetry>> telemetry_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> telemetry_dirty_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::weak_ptr<const GpuTopology>> topologies_ ABSL_GUARDED_BY(mu_);  // by source
  size_t topologies_after_sweep_ ABSL_GUARDED_BY(mu_) = 0;
  bool node_set_changed_ ABSL_GUARDED_BY(mu_) = true;
  // Stored by Publish under mu_ (so publishes build on one another), loaded
  // by readers without it. (libstdc++ guards the pointer with a spin bit
  // held for a reference-count update, never while a snapshot is built.)
  std::atomic<std::shared_ptr<const ClusterSnapshot>> current_;
};

}  // namespace tessera
