// Where one pod goes: the profile run over every node (Profile::Run, the
// extender's own loop, filtering first), with each pod class's answers kept
// per node version, and the best node of the run. Shared by the paper's
// replay (sim/replay.h) and the tenant replay (sim/tenant_replay.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "scheduler/framework/profile.h"
#include "sim/cluster.h"

namespace tessera::sim {

/// The salt of the pod submitted at `position` of run `seed` (plugins that
/// choose at random hash it).
uint64_t SaltOf(uint64_t seed, size_t position);

/// One pod class's answers on every node of a cluster, kept while the
/// node's version stays: the cache Profile::Run consults for the class's
/// pods. Pods of one class differ only in their salt, so a replay keeps
/// answers per class only when no plugin answers by the salt
/// (AnswersDependOnSalt).
class ClassAnswers final : public NodeAnswerCache {
 public:
  explicit ClassAnswers(const Cluster& cluster) : cluster_(&cluster) {}

  /// Forgets every answer (the profile in force changed).
  void Clear();

  /// `nodes` must be the cluster's views, in order (AllNodes).
  void Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
            std::vector<size_t>& missing) override;
  void Keep(absl::Span<const NodeView* const> nodes, absl::Span<const size_t> computed_at,
            std::vector<NodeAnswer>& computed) override;

 private:
  const Cluster* cluster_;  // not owned
  std::vector<NodeAnswer> answers_;  // by node; empty until the class's first pod
  std::vector<uint32_t> versions_;   // by node: the version its answer is for; 0: none
};

/// Every node of `cluster`, in order, as Profile::Run takes them.
std::vector<const NodeView*> AllNodes(const Cluster& cluster);

/// The profile run over every node (`nodes`: AllNodes(cluster)), filtering
/// first, consulting `answers` (null: none), into `run`; `scratch` and `run`
/// are kept by the replay from pod to pod.
void EvaluateNodes(const Profile& profile, const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                   ClassAnswers* answers, RunScratch& scratch, RunResult& run);

/// The fitting node of `run` with the highest weighted sum; ties go to the
/// lower rank (the run's random node order, as kube-scheduler's pick among
/// equals). `run.fitting` is not empty.
size_t BestNode(const RunResult& run, const std::vector<uint32_t>& rank);

/// The GPUs the run chose on `node`, a fitting node of it (choosers are
/// deterministic: asked again, they choose the same).
GpuChoice ChoiceOn(const Profile& profile, const CycleState& cycle, const NodeView& node);

/// The GPUs the pod gets on `node` when every filter passes; else nullopt.
std::optional<GpuChoice> FitOn(const Profile& profile, const CycleState& cycle, const NodeView& node);

}  // namespace tessera::sim
