// The immutable model of the cluster's GPUs that one request reads.
//
// Writers (the cluster file loader, the API-server watch, the binder's
// reservations and the telemetry refresher) change a ClusterModel and publish
// a new ClusterSnapshot; a request takes the current snapshot once, at its
// start, and reads only that. Nodes are shared between
// consecutive snapshots (copy-on-write per node), so publishing after one pod
// changed copies one node, not the cluster.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "scheduler/cache/node_name_index.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/cache/consumer_usage.h"
#include "scheduler/framework/node_view.h"
#include "scheduler/model/gpu.h"

namespace tessera {

/// Dense index of a node inside one snapshot.
using NodeIndex = uint32_t;

/// A pod bound to a node, or being bound: the GPUs its
/// `tessera.io/gpu-assignment` says it holds (none for a pod that asks for no
/// GPU) and what it asks of the node's host CPU and memory.
struct PodHolding {
  std::string uid;        ///< Identity; the pod's metadata.uid.
  std::string pod_key;    ///< "namespace/name", for messages.
  GpuAssignment assignment;
  /// The pod's effective CPU and memory request (k8s/pod_host_request.h).
  HostRequest host{};
  /// A bind in flight: reserved by Tessera, not yet seen bound through the watch.
  bool in_flight = false;
  /// When the pod was bound to its node (InfinitePast: unknown). Lets the
  /// load-aware plugin estimate the load of pods that live GPU metrics
  /// sampled before the bind cannot show yet.
  absl::Time bound_at = absl::InfinitePast();
  /// spec.priority: preemption evicts lower priorities first.
  int32_t priority = 0;
  /// The pod's `tessera.io/tenant` label; empty when it has none.
  std::string tenant_label = {};
  /// Why what the pod holds is unknown (its `tessera.io/gpu-assignment`
  /// unreadable and nothing else to go by); empty when it is known. Such a
  /// pod holds no share the model can count, so its node takes no GPU pod
  /// while it is there (NodeState::gpus_withheld).
  std::string unknown_holding = {};

  /// The namespace, from `pod_key`.
  [[nodiscard]] std::string_view namespace_name() const {
    const std::string_view key = pod_key;
    return key.substr(0, key.find('/') == std::string_view::npos ? 0 : key.find('/'));
  }
  [[nodiscard]] ConsumerKey consumer() const { return ConsumerKey{std::string(namespace_name()), tenant_label}; }
  bool operator==(const PodHolding&) const = default;
};

/// One node: its GPUs and what pods hold on them.
struct NodeState {
  std::string name;
  /// The node pool it belongs to (k8s/node_pool.h reads it from the node's
  /// labels); empty when none is known. For the per-pool metrics only: no
  /// plugin reads it.
  std::string pool;
  NodeInventory inventory;
  absl::Status inventory_error;     ///< Not OK: inventory unparsable, node treated as having no GPUs.
  std::vector<GpuUsage> usage;      ///< By GPU index; sized to cover every index pods hold.
  /// The inventory joined with `usage`. The snapshot packs every node's in
  /// one block, which NodeView::gpu_states points at.
  std::vector<GpuState> gpu_states;
  std::vector<PodHolding> pods;     ///< Pods holding GPUs here, sorted by uid.
  std::vector<std::string> problems;///< Inconsistencies found (overcommitted GPU, unknown GPU index).
  std::vector<GpuBinding> bindings; ///< Shares of pods with a known bind time, newest first.
  std::vector<GpuPodShape> pod_shapes; ///< The pods above by shape, in order of first appearance.
  /// Host CPU and memory: the node's allocatable, and Σ requests of every
  /// pod bound here (GPU or not) and of binds in flight to it. nullopt when
  /// the allocatable is unknown (NodeView::host is then null).
  std::optional<HostResources> host;
  /// Non-empty while a pod here holds GPUs the model cannot count
  /// (PodHolding::unknown_holding): why no GPU pod may be placed here.
  std::string gpus_withheld;
  /// What the pods above hold, per consumer (ClusterSnapshot::consumers sums them).
  std::vector<std::pair<ConsumerKey, GpuTotals>> consumers;
  /// Unique over the process, stamped when the model builds this state; a
  /// node that did not change keeps its state, and so its version, across
  /// publishes (NodeView::version, what ScoreMemo keys on).
  uint64_t version = 0;
};

class ClusterSnapshot {
 public:
  ClusterSnapshot() = default;

  /// \return nullopt when the snapshot does not know the node.
  [[nodiscard]] std::optional<NodeIndex> FindNode(std::string_view name) const;
  /// The index FindNode reads, for a caller that looks many names up: a
  /// request names thousands of nodes in an order unrelated to the index, so
  /// it hashes each once and prefetches a few names ahead (the lookups were a
  /// quarter of a 5000-node prioritize). Empty before the first publish.
  [[nodiscard]] const NodeNameIndex& node_names() const;
  [[nodiscard]] const NodeState& node(NodeIndex i) const { return *nodes_[i]; }
  [[nodiscard]] size_t node_count() const { return nodes_.size(); }
  /// GPUs over all nodes' inventories.
  [[nodiscard]] size_t gpu_count() const { return gpu_count_; }
  /// Nodes whose inventory is unparsable.
  [[nodiscard]] size_t nodes_with_inventory_errors() const { return inventory_errors_; }
  /// What each consumer's pods hold (binds in flight included), over all nodes.
  [[nodiscard]] const ConsumerUsage& consumers() const { return *consumers_; }
  /// The GPUs of every node's inventory that are healthy: 1000 milli each,
  /// their memory, their count.
  [[nodiscard]] const GpuTotals& healthy_capacity() const { return capacity_; }
  /// Increases with every publish.
  [[nodiscard]] uint64_t generation() const { return generation_; }

  /// The node as plugins see it, inventory from the snapshot. Precomputed at
  /// publish time in one dense array: the request path reads no pointer chain.
  [[nodiscard]] const NodeView& View(NodeIndex i) const { return views_[i]; }

 private:
  friend class ClusterModel;

  std::vector<std::shared_ptr<const NodeState>> nodes_;  // sorted by name
  std::vector<NodeView> views_;  // views_[i] points into *nodes_[i] and its GPU state block
  // Every node's GPU states, packed node after node in blocks of
  // kNodesPerGpuStateBlock nodes; each view points into its node's block
  // rather than into its NodeState. Filter and prioritize read them on every
  // node of a request: packed, they span few pages (the TLB holds them all)
  // and, nodes named in order, stream. Blocks are shared between snapshots
  // as nodes are: a publish copies only the blocks of the nodes that changed.
  struct GpuStateBlock {
    std::vector<GpuState> states;
    std::vector<uint32_t> at;  // the block's k-th node's are states[at[k] .. at[k + 1])
  };
  static constexpr size_t kNodesPerGpuStateBlock = 256;  // 56 KiB of 8-GPU nodes
  std::vector<std::shared_ptr<const GpuStateBlock>> gpu_state_blocks_;
  // Live GPU metrics by node index, apart from nodes_ so that a telemetry
  // refresh swaps pointers instead of copying nodes; empty when no node has any.
  std::vector<std::shared_ptr<const NodeTelemetry>> telemetry_;
  std::shared_ptr<const NodeNameIndex> index_;
  size_t gpu_count_ = 0;
  size_t inventory_errors_ = 0;
  std::shared_ptr<const ConsumerUsage> consumers_ = std::make_shared<const ConsumerUsage>();
  GpuTotals capacity_;
  uint64_t generation_ = 0;
};

}  // namespace tessera
