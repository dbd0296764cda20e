// A policy's profiles: the default, and one per node pool that pods of given
// task types are routed to (the policy file's `pools:`, docs/concepts/pools.md). One set is published at a time, so a request that reads it once
// places its pod by one consistent policy.
//
// Routing, for a pod whose task type is T (its `tessera.io/task-type` label):
//   1. A pool lists T: the pod goes only on that pool's nodes (a node's pool
//      is NodeState::pool), placed by that pool's profile.
//   2. Otherwise (no task type, or one no pool lists): the default profile,
//      on every node but those of an `exclusive` pool.
// A node refused for its pool is refused as unresolvable: evicting pods does
// not move a node into another pool.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/profile.h"

namespace tessera {

/// One entry of a policy's `pools:`.
struct PoolPolicy {
  /// The node pool, as the node's pool label names it (NodeState::pool).
  std::string name;
  /// Pods of these task types go to this pool, and only to it. Not empty.
  std::vector<std::string> task_types;
  /// Whether the pool's nodes take only those pods: a pod of no task type,
  /// or of one no pool lists, is then refused there.
  bool exclusive = false;
  /// Places the pool's pods; never null.
  std::shared_ptr<const Profile> profile;
};

/// How many nodes filter passes on for a pod that asks for GPUs (the policy
/// file's `shortlist:`, docs/concepts/kubernetes.md): at most `max_nodes` of those
/// the pod's profile ranks best (every node at the highest score), so that
/// kube-scheduler's own score plugins and the prioritize call weigh a
/// handful of nodes, not thousands, and only choose among equally good ones.
/// 0: every node that fits is passed on, and kube-scheduler's scores may
/// overrule Tessera's ranking.
struct Shortlist {
  static constexpr int64_t kDefaultMaxNodes = 1;
  static constexpr int64_t kMostNodes = 100;
  int64_t max_nodes = kDefaultMaxNodes;  ///< 0..kMostNodes.

  friend bool operator==(const Shortlist&, const Shortlist&) = default;
};

/// Immutable once built; shared by requests through a shared_ptr.
class ProfileSet {
 public:
  /// Checks: a default profile and every pool's, pool names non-empty and
  /// unique, each pool with a task type, no task type in two pools, the
  /// shortlist in range.
  static absl::StatusOr<std::shared_ptr<const ProfileSet>> Create(std::shared_ptr<const Profile> default_profile,
                                                                  std::vector<PoolPolicy> pools,
                                                                  Shortlist shortlist = {});
  /// A set of one profile and no pools: every pod, every node; the default shortlist.
  static std::shared_ptr<const ProfileSet> Single(std::shared_ptr<const Profile> profile);
  /// This set with `default_profile` (never null) in place of its default;
  /// the pools and the shortlist are shared.
  [[nodiscard]] std::shared_ptr<const ProfileSet> WithDefault(std::shared_ptr<const Profile> default_profile) const;

  /// What places pods no pool takes.
  [[nodiscard]] const std::shared_ptr<const Profile>& default_profile() const { return default_; }
  /// In the policy file's order.
  [[nodiscard]] const std::vector<PoolPolicy>& pools() const { return pools_; }
  /// The pool that pods of `task_type` go to; null when none lists it (or it is empty).
  [[nodiscard]] const PoolPolicy* PoolFor(std::string_view task_type) const;
  /// Whether `profile` is the default's or a pool's.
  [[nodiscard]] bool Contains(const Profile* profile) const;
  /// Whether some pool keeps other pods off its nodes.
  [[nodiscard]] bool has_exclusive_pools() const { return has_exclusive_; }
  /// How many of the best nodes filter passes on (every profile alike).
  [[nodiscard]] const Shortlist& shortlist() const { return shortlist_; }

 private:
  ProfileSet(std::shared_ptr<const Profile> default_profile, std::vector<PoolPolicy> pools, Shortlist shortlist);

  std::shared_ptr<const Profile> default_;
  std::vector<PoolPolicy> pools_;
  bool has_exclusive_ = false;
  Shortlist shortlist_;
};

/// Where one pod may go and which profile places it: decided once per
/// request, asked per node. Not thread-safe (it keeps the verdicts it built,
/// one per node pool seen); the set must outlive it.
class PoolRoute {
 public:
  /// Reason codes of the verdicts (tessera_filter_rejections_total).
  static constexpr std::string_view kOutsidePool = "node_pool_mismatch";  ///< A routed pod, a node of another pool.
  static constexpr std::string_view kReservedPool = "node_pool_reserved";  ///< Another pod, an exclusive pool's node.

  /// \param task_type the pod's task type; empty: none.
  PoolRoute(const ProfileSet& set, std::string_view task_type);

  /// The profile that places the pod.
  [[nodiscard]] const std::shared_ptr<const Profile>& profile() const {
    return pool_ != nullptr ? pool_->profile : set_->default_profile();
  }
  /// The pool the pod goes to; null: the default profile's.
  [[nodiscard]] const PoolPolicy* pool() const { return pool_; }
  /// Whether any node may be refused for its pool. When false, no caller
  /// needs to look a node's pool up.
  [[nodiscard]] bool restricts_nodes() const { return pool_ != nullptr || set_->has_exclusive_pools(); }
  /// Whether the pod may go on a node of pool `node_pool` (empty: none).
  [[nodiscard]] bool Admits(std::string_view node_pool) const;
  /// Null when Admits(node_pool); else the verdict for such a node, one per
  /// pool, valid as long as the route (its message names both sides, e.g. `node pool a100 is reserved
  /// for task types training; pod's task type is inference`).
  [[nodiscard]] const FilterVerdict* Refusal(std::string_view node_pool);

 private:
  [[nodiscard]] std::string RefusalMessage(std::string_view node_pool) const;

  const ProfileSet* set_;
  std::string task_type_;
  const PoolPolicy* pool_;
  // By node pool (few); a list: built only when a node is refused (libstdc++'s
  // deque allocates when constructed, once per request), and entries stay put.
  std::list<std::pair<std::string, FilterVerdict>> refusals_;
};

}  // namespace tessera
