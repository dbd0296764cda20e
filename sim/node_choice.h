// Where one pod goes: every node's verdict and raw scores for the pod
// (memoised per node version), and the best feasible node. Shared by the
// paper's replay (sim/replay.h) and the tenant replay (sim/tenant_replay.h).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "scheduler/framework/profile.h"
#include "sim/cluster.h"

namespace tessera::sim {

/// What the profile said about one node for one pod class.
struct Verdict {
  uint32_t version = 0;  ///< The node's version it was computed at; 0: never.
  bool fits = false;
  GpuChoice choice;
};

/// The salt of the pod submitted at `position` of run `seed` (plugins that
/// choose at random hash it).
uint64_t SaltOf(uint64_t seed, size_t position);

/// Filter, choose and score one node; raw scores go to `raw` (one per score plugin).
void Evaluate(const Profile& profile, const CycleState& cycle, const NodeView& node, Verdict& v, absl::Span<int64_t> raw);

/// Every node's verdict and raw scores for the pod (kept per class while a
/// node's version stays, when `memoised`): the nodes where it fits, in
/// order, into `feasible`, and per score plugin their raw scores into `scores`.
void EvaluateNodes(const Profile& profile, const CycleState& cycle, const Cluster& cluster, bool memoised,
                   std::vector<Verdict>& verdict, std::vector<int64_t>& memo_raw, std::vector<uint32_t>& feasible,
                   std::vector<std::vector<int64_t>>& scores);

/// The feasible node with the highest weighted score (at plugin resolution);
/// ties go to the lower rank (the run's random node order, as
/// kube-scheduler's pick among equals). `feasible` is not empty.
size_t BestNode(const Profile& profile, const std::vector<uint32_t>& feasible,
                std::vector<std::vector<int64_t>>& scores, const std::vector<uint32_t>& rank,
                std::vector<int64_t>& totals);

}  // namespace tessera::sim
