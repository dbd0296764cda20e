// mig-partition: pods that ask for a MIG instance get a free one.
//
// Assumptions
//   - A GPU in MIG mode is split into instances by its node (an operator or
//     a MIG manager); the node's inventory lists them with their profile and
//     start slice (GpuDevice::mig). Tessera places pods on instances that
//     exist and never makes or destroys one: it advises where re-partitioning
//     would help (scheduler/cache/mig_repartition.h).
//   - What pods hold comes from their assignment annotations: the instance by
//     its start slice (GpuUsage::mig_held_starts).
//   - A pod asks for one instance of one profile (PodGpuRequest::mig_profile).
//     Pods asking for shares or whole GPUs never land on a MIG GPU
//     (gpu-share refuses them), and MIG pods never on a shared GPU.
//
// Algorithm, per node
//   1. Candidates: every free instance of the profile on a healthy GPU in
//      MIG mode whose model the pod accepts.
//   2. Filter: no GPU in MIG mode, none offering the profile, or none holding
//      an instance of it -> never (only re-partitioning helps, which no
//      preemption does); instances of it all held -> not now.
//   3. Choose the candidate that keeps the GPU's remaining geometry most
//      useful. A GPU's geometry is what could still be made on the slices
//      no pod holds (free instances can be re-made without disturbing
//      anyone): for each profile, how many more instances fit
//      (MaxMoreMigInstances). Taking an instance costs
//        loss = Σ over profiles q of weight(q) × (fit(q) before − fit(q) after),
//      weight being the expected share of MIG pods asking for q
//      (`profileMix`). The lowest loss wins, then the GPU with more slices
//      already held (packs, keeping whole GPUs free), then lower index and
//      start. A 1g pod thus goes beside other 1g pods instead of into the
//      first slice of an empty GPU, whose 7g it would break.
//   4. Score: the chosen candidate's loss, less is better, normalised min-max
//      over the nodes that fit.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/model/mig_geometry.h"

namespace tessera {

class PluginArgs;

/// The validated args of mig-partition.
struct MigPartitionArgs {
  /// The expected mix of MIG requests: profile name -> weight (1..1000).
  /// A profile not listed weighs `default_weight`.
  std::vector<std::pair<std::string, int64_t>> profile_mix = {};
  int64_t default_weight = 1;
};

/// Each profile's weight for one GPU model, in the order of its geometry's
/// profiles: what the loss of step 3 weighs fits with.
class MigProfileWeights {
 public:
  explicit MigProfileWeights(const MigPartitionArgs& args);
  /// The weights for `geometry`'s profiles (one of AllMigGeometries()).
  [[nodiscard]] absl::Span<const int64_t> For(const MigGeometry& geometry) const;

 private:
  static constexpr size_t kMostProfiles = 8;
  std::vector<std::array<int64_t, kMostProfiles>> by_geometry_;  // AllMigGeometries()' order
};

class MigPartitionPlugin final : public Plugin, public GpuChooserPlugin, public ScorePlugin, public NormalizeScorePlugin {
 public:
  static constexpr std::string_view kName = "mig-partition";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Filter, MIG instance choice and score for pods that ask for a MIG instance.";

  /// Reads profileMix (a map of profile to weight) and defaultWeight from `args`.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  explicit MigPartitionPlugin(const MigPartitionArgs& args)
      : Plugin(/*memoizable=*/true), weights_(args) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  /// It places MIG instances, and scores only them.
  [[nodiscard]] GpuRequestKind Places() const override { return GpuRequestKind::kMigInstance; }
  [[nodiscard]] bool Scores(GpuRequestKind kind) const override { return kind == GpuRequestKind::kMigInstance; }
  [[nodiscard]] FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const override;
  /// The GPUs with a free instance of the profile, each by its best
  /// instance in step 3's order; equal losses and held slices share a tier.
  void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const override;
  [[nodiscard]] std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const override;
  /// The best free instance of the chosen GPU, with the instance's compute
  /// (sevenths of 1000 milli, rounded down) and memory for accounting.
  [[nodiscard]] std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const override;
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  void NormalizeScores(absl::Span<int64_t> scores) const override;

 private:
  struct Candidate;
  // The best free instance on GPU `position` of `node`, if it has one.
  [[nodiscard]] std::optional<Candidate> BestOnGpu(const CycleState& cycle, const NodeView& node,
                                                   size_t position) const;
  [[nodiscard]] std::optional<Candidate> BestOnNode(const CycleState& cycle, const NodeView& node) const;
  // Whether any instance of the profile on `node` is free for the pod: the
  // filter's test, without weighing which one.
  static bool HasFreeInstance(const CycleState& cycle, const NodeView& node);

  MigProfileWeights weights_;
};

}  // namespace tessera
