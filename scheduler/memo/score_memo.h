// Prioritize without redoing what has not changed.
//
// Between two pods, a scheduler usually sees the cluster change on one node
// (the last bind) and the next pod ask for what the last one asked (replicas
// of one workload). A memoisable profile's GPU choice and raw scores on a
// node are a function of the request and the node's state alone
// (Plugin::Memoizable), and the state is named by NodeView::version. So a
// ScoreMemo keeps, for the last few distinct requests, every node's answer
// (NodeAnswer: choice and raw scores) by version. It is the cache that
// Profile::Run, the profile's one loop over nodes, consults: a request
// computes only the nodes whose version its slot has not seen, and the run
// redoes the rest (normalisation over all fitting nodes, the weighing) as
// it does for Profile::Score, so the answer is Profile::Score's, bit for bit.
//
// Plugins that read what the version does not name (load-aware: live
// telemetry and the clock) are asked on every request: GPU exclusion plugins
// rule GPUs out anew (where they take the kept choice away, the node is
// chosen and scored afresh), and non-memoisable score plugins score the
// kept choice anew. Only the choosers must be memoisable.
//
// Memory, bounded: at most `max_requests` requests; per request, between
// requests, at most MaxEntries(N) = 1.25·N + 64 node answers, N the most
// versioned nodes one of its requests named (beyond that, old versions are
// swept). An answer takes 120 bytes in the request's arrays (the answer,
// its version and last reader) and 17 in its index: at 5000 nodes about
// 0.7 MB a request, and the default 32 requests hold 22 MB (up to twice
// that after requests that each found most nodes changed at once: arrays
// and indices do not shrink). Besides, one request's working space is kept
// for the next: about 140 bytes a node of the largest request, 0.7 MB at
// 5000 nodes.
//
// Computing a node is the costly part (the profile's plugins; ~0.25 µs a node
// with the default policy), and a new request or a policy reload computes
// every node. Given a WorkerPool, a request with at least
// kMinParallelNodes nodes to compute spreads them over the pool's threads;
// everything else (lookups, GPU exclusions, normalisation) stays on the
// caller, so the answer is the same whichever thread computed what.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "scheduler/framework/profile.h"
#include "scheduler/framework/profile_set.h"

namespace tessera {

class WorkerPool;

class ScoreMemo {
 public:
  /// How many distinct requests are kept by default, least recently used
  /// out. Replaying the Alibaba trace's 8152 pods in arrival order (151
  /// shapes), an LRU of 8 shapes finds the pod's shape 65% of the time, of
  /// 32 88%, of 128 98%: 32 trades 26 MB at 5000 nodes for most of the gain.
  static constexpr size_t kDefaultRequests = 32;
  /// Fewest nodes to compute in one request for the pool to be used: fewer
  /// take under ~0.5 ms with the default policy, and waking the pool's
  /// threads (tens of µs on a busy machine) would eat much of the gain.
  static constexpr size_t kMinParallelNodes = 512;
  /// Nodes a pool thread takes at a time: large enough that the shared
  /// cursor is rarely touched, small enough that threads finish together.
  static constexpr size_t kParallelGrain = 64;

  /// What the memo did so far (for tests, benchmarks and metrics).
  struct Counters {
    uint64_t nodes_computed = 0;  ///< Nodes whose choice and raw scores were computed.
    uint64_t nodes_reused = 0;    ///< Nodes answered from the memo.
    /// Requests answered by Profile::Score: the profile's GPU choice is not
    /// memoisable, or another request was using the memo.
    uint64_t requests_bypassed = 0;
    /// Of nodes_computed, those handed to the worker pool (requests with at
    /// least kMinParallelNodes to compute, when a pool was given). The pool
    /// runs them on the caller alone while another request has its threads.
    uint64_t nodes_computed_in_parallel = 0;
  };

  /// \param pool if non-null, computes the nodes of requests with many to
  ///   compute (not owned; must outlive the memo). A pool without threads
  ///   is the same as none.
  explicit ScoreMemo(std::shared_ptr<const Profile> profile, size_t max_requests = kDefaultRequests,
                     WorkerPool* pool = nullptr);
  ScoreMemo(const ScoreMemo&) = delete;
  ScoreMemo& operator=(const ScoreMemo&) = delete;

  [[nodiscard]] const std::shared_ptr<const Profile>& profile() const { return profile_; }

  /// profile()->Score(request, nodes, choices), bit for bit. Nodes with
  /// version 0 are computed every time and never kept. Thread-safe: one
  /// request at a time uses the memo; one that finds it in use does not wait
  /// but computes without it (kube-scheduler prioritizes one pod at a time,
  /// so that is rare).
  /// \param this_call if non-null, receives what this call did (for metrics:
  ///   counters() would mix in concurrent calls).
  [[nodiscard]] std::vector<int64_t> Score(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                           std::vector<std::optional<GpuChoice>>* choices,
                                           Counters* this_call = nullptr) const;

  [[nodiscard]] Counters counters() const;
  /// Node answers held now, over all requests kept: what the memory bound bounds.
  [[nodiscard]] size_t memoized_nodes() const;
  /// The most node answers kept between requests for one request whose
  /// largest named `largest_request` nodes with a version.
  [[nodiscard]] static size_t MaxEntries(size_t largest_request);

 private:
  // The answers for one request: dense, in the order they were computed
  // (the order nodes are named in), with per answer the node version it
  // holds for and the last request that read it, and an index by version.
  // A new request adopts the array its nodes were computed into whole, and
  // the index is small (17 bytes an answer, control byte included) where a
  // hash table of the answers themselves would hold over 100: building it
  // touches a sixth of the memory.
  struct Slot {
    PodGpuRequest request;
    uint64_t last_use = 0;    // the memo's clock at its last request (LRU)
    uint64_t uses = 0;        // requests it served
    size_t high_water = 0;    // most versioned nodes one request named
    std::vector<NodeAnswer> answers;
    std::vector<uint64_t> versions;  // per answer: its node's version; 0: not indexed (a duplicate)
    std::vector<uint64_t> read_by;   // per answer: the slot's use that last read it
    absl::flat_hash_map<uint64_t, uint32_t> at;  // version -> position in `answers`
  };
  class SlotCache;  // the NodeAnswerCache Profile::Run consults: one slot, one request (score_memo.cc)

  std::vector<int64_t> ScoreLocked(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                   std::vector<std::optional<GpuChoice>>* choices, Counters& this_call) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Slot& SlotFor(const PodGpuRequest& request) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the answers request `use` did not read (old versions of nodes that
  // changed), keeping the others' order, and re-indexes.
  static void Sweep(Slot& slot, uint64_t use);

  const std::shared_ptr<const Profile> profile_;
  const bool memoizable_;
  const size_t max_requests_;
  WorkerPool* const pool_;  // null: every node is computed on the caller

  mutable absl::Mutex mu_;
  mutable std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  // One request's working space, kept for the next (sized by the largest).
  mutable RunScratch scratch_ ABSL_GUARDED_BY(mu_);
  mutable RunResult run_ ABSL_GUARDED_BY(mu_);

  mutable std::atomic<uint64_t> nodes_computed_{0};
  mutable std::atomic<uint64_t> nodes_reused_{0};
  mutable std::atomic<uint64_t> requests_bypassed_{0};
  mutable std::atomic<uint64_t> nodes_computed_in_parallel_{0};
};

/// The ScoreMemo of whichever profile is in force, for a caller that reads
/// the profile anew on every request (ExtenderService): a request under
/// another profile than the memo's (a policy reload) replaces the memo, so
/// no answer of an old policy is ever reused. Thread-safe.
class ScoreMemoHolder {
 public:
  /// \param pool handed to every memo made (not owned; must outlive them).
  explicit ScoreMemoHolder(WorkerPool* pool = nullptr) : pool_(pool) {}

  /// The memo for `profile`, made fresh when `profile` is not the last one's.
  [[nodiscard]] std::shared_ptr<const ScoreMemo> For(std::shared_ptr<const Profile> profile);

  /// The memo for `profile`, one of `policy`'s (the default's or a pool's):
  /// one memo per profile of the policy in force, so pods routed to
  /// different pools do not wipe each other's answers. Memos of profiles
  /// `policy` does not have (a policy reloaded) are dropped.
  [[nodiscard]] std::shared_ptr<const ScoreMemo> For(const ProfileSet& policy, std::shared_ptr<const Profile> profile);

 private:
  WorkerPool* const pool_;
  absl::Mutex mu_;
  // One per profile; as many as the policy in force has profiles (few).
  std::vector<std::shared_ptr<const ScoreMemo>> memos_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
