// A scheduling profile: the plugins a policy file chose, with their weights,
// and the code that runs them over a request's candidate nodes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/profile_run.h"
#include "scheduler/model/target_workload.h"

namespace tessera {

/// A plugin as the policy file configured it.
struct WeightedPlugin {
  std::shared_ptr<const Plugin> plugin;  ///< Shared by the profiles WithWorkload derives.
  int64_t weight = 1;  ///< Applies to the plugin's score; 1..100.
};

/// Immutable once built: requests share one profile through a shared_ptr, and
/// a reload publishes a new one.
///
/// Every method takes the request's CycleState. A pod that asks for no GPU
/// (`!cycle.wants_gpus()`) is decided here: it gets no GPUs on every node,
/// and only the node filters and the node scores are asked about it.
class Profile {
 public:
  /// Finds each plugin's extension points (plugin.h) and checks the
  /// combination: at least one plugin, each implementing some point, no
  /// plugin twice; exactly one chooser placing shares, at most one placing
  /// MIG instances, at most one GPU set chooser, only it filtering GPU
  /// sets, only score plugins normalising.
  static absl::StatusOr<std::shared_ptr<const Profile>> Create(std::vector<WeightedPlugin> plugins);

  /// Asks the node filters in profile order, the chooser's FilterGpus in
  /// its place among them; the first rejection wins. Then, when GPU
  /// exclusion plugins rule GPUs out and too few are left, the first of
  /// them that ruled any out explains the rejection. Then a GPU set filter
  /// judges the set ChooseGpus gives.
  [[nodiscard]] FilterVerdict Filter(const CycleState& cycle, const NodeView& node) const;

  /// The GPUs the pod would get on `node`, or nullopt if it does not fit now.
  /// Choosers are deterministic, so this is how the choice prioritize scored
  /// is kept for bind: asked again on a node that has not changed since, it
  /// gives the same GPUs; on one that has, it gives the GPUs that fit now.
  /// With a GPU set chooser or GPUs ruled out, the chooser ranks the GPUs
  /// that fit, the ruled-out ones are dropped, and the set chooser picks
  /// among the rest (the chooser's first ones when there is none or it has
  /// no opinion). An empty choice for a pod that asks for no GPU.
  [[nodiscard]] std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const;

  /// What the pod would hold on each GPU of `choice` (the chooser decides:
  /// a whole-GPU pod reserves the GPU's memory, a shared one its request).
  [[nodiscard]] std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const;

  /// The Reserve point, after the GPUs are chosen: asks every ReservePlugin
  /// in profile order to reserve `shares` for the pod on `node`. The first
  /// error stops it: the plugins already reserved are unreserved, in reverse
  /// order, and the error is returned (the bind reports it). OK with no
  /// ReservePlugin. The caller's own bookkeeping (the cluster model's
  /// reservation) comes after, and a caller that gives the placement up
  /// after an OK calls Unreserve.
  [[nodiscard]] absl::Status Reserve(const CycleState& cycle, const NodeView& node,
                                     absl::Span<const GpuShare> shares) const;
  /// The Unreserve point: every ReservePlugin, in reverse profile order,
  /// undoes what Reserve did for the pod on `node_name`.
  void Unreserve(const CycleState& cycle, std::string_view node_name, absl::Span<const GpuShare> shares) const;
  /// Whether any plugin implements the Reserve point: a caller keeps what
  /// it needs to call Unreserve only then.
  [[nodiscard]] bool has_reserve_plugins() const { return !reservers_.empty(); }

  /// Runs the profile over `nodes`, the one loop every caller that scores
  /// nodes shares (profile_run.h): per node, the memoizable answer (the GPU
  /// choice before any GPU is ruled out, the memoizable score plugins' raw
  /// scores; with `options.filter`, the filters first) comes from
  /// `options.cache` or is computed; then the GPUs ruled out now are
  /// dropped (the node is chosen anew where that changes its choice, and
  /// does not fit where too few are left), the other score plugins score,
  /// every score plugin normalises over the nodes where the pod fits, and
  /// the scores are weighed and summed at plugin resolution.
  /// \param choices if non-null, receives the choice per node (nullopt: no fit).
  [[nodiscard]] RunResult Run(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                              const RunOptions& options, std::vector<std::optional<GpuChoice>>* choices) const;
  /// The same into `result`, whose vectors are reused (a caller that runs
  /// often keeps it with its RunScratch).
  void Run(const CycleState& cycle, absl::Span<const NodeView* const> nodes, const RunOptions& options,
           std::vector<std::optional<GpuChoice>>* choices, RunResult& result) const;

  /// Scores every node in 0..kMaxWireScore: Run with no cache, its sums put
  /// on the wire once, by WireScores (0 where the pod does not fit).
  /// \param choices if non-null, receives the choice per node (nullopt: no fit).
  [[nodiscard]] std::vector<int64_t> Score(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                           std::vector<std::optional<GpuChoice>>* choices) const;
  /// The wire scores of `nodes` from a run over them: 0 where the pod does not fit.
  [[nodiscard]] static std::vector<int64_t> WireScores(const RunResult& run, size_t nodes);

  /// The wire scores of the nodes where the pod fits, from their weighted
  /// sums (RunResult::totals), same order. The wire has only 11 levels
  /// (kube-scheduler's 0..10) where a policy like fgd separates its best node
  /// from the next by 1 in 10 000, and rounding the sums would tie them. So
  /// the order that matters is kept: every node with the highest sum gets
  /// 10, the others 1..9 by their sum between the lowest and the highest
  /// (kube-scheduler adds only differences between nodes to its own plugins'
  /// scores, so absolute levels carry nothing); 0 stays "does not fit". When
  /// all sums are equal, all get 10. What kube-scheduler then takes among
  /// the nodes at 10 is the simulator's tie-break among the best.
  [[nodiscard]] static std::vector<int64_t> WireScores(absl::Span<const int64_t> totals);

  /// This profile with every plugin that measures against an expected
  /// workload (Plugin::WithWorkload) measuring against `workload`; the other
  /// plugins are shared. Null when no plugin takes a workload.
  [[nodiscard]] std::shared_ptr<const Profile> WithWorkload(std::shared_ptr<const TargetWorkload> workload) const;
  /// What each plugin that measures against a workload concludes from the
  /// cluster its workload was told (TargetWorkload::cluster_verdict), in
  /// plugin order. Two profiles with the same verdicts and mixes that
  /// differ only in the cluster they were told score every node alike.
  [[nodiscard]] std::vector<TargetWorkload::ClusterVerdict> ClusterVerdicts() const;
  /// For the mix in force told the cluster anew (MixLearner::Retold): this
  /// profile (the policy file's) measuring against `retold` when that
  /// changes a verdict against `in_force` (the profile measuring against
  /// the mix before); else null, and `in_force` stays: the cluster changes
  /// with every bind, and a new profile is a new memo key.
  [[nodiscard]] std::shared_ptr<const Profile> WithRetoldWorkload(std::shared_ptr<const TargetWorkload> retold,
                                                                  const Profile& in_force) const;

  /// Names of the configured plugins, in order.
  [[nodiscard]] std::vector<std::string> PluginNames() const;

  /// Whether the GPU choice before any GPU is ruled out (the choosers' and
  /// the GPU set chooser's) is Memoizable(): then a node's answer for one
  /// request (NodeAnswer) stays valid while the node's version does, and
  /// Run consults a cache. GPU exclusion plugins and the score plugins that
  /// are not memoizable are asked anew every run.
  [[nodiscard]] bool memoizable() const { return memoizable_; }
  /// Whether any plugin rules single GPUs out (GpuExclusionPlugin).
  [[nodiscard]] bool has_gpu_exclusions() const { return !excluders_.empty(); }
  /// Σ of the score plugins' weights: a fitting node's sum is at most
  /// kMaxPluginScore times this.
  [[nodiscard]] int64_t total_weight() const;

 private:
  struct WeightedScorer {
    const ScorePlugin* score;
    const NormalizeScorePlugin* normalize;  // null: the raw scores stand
    int64_t weight;
    bool memoizable;
    // Per GpuRequestKind: whether it scores that kind (else 0 everywhere),
    // and whether it is that kind's chooser too (then the choice's
    // chooser_score stands for its ScoreNode).
    std::array<bool, kGpuRequestKinds> scores;
    std::array<bool, kGpuRequestKinds> chose;
  };
  // A filter in profile order: a node filter, or a chooser's FilterGpus
  // (asked only of the kind of request it places).
  struct FilterStep {
    const NodeFilterPlugin* node;     // null: a chooser's step
    const GpuChooserPlugin* chooser;  // null: a node filter's step
    GpuRequestKind kind;              // the chooser's kind
  };

  // The chooser that places this request (null for kNone, and for a MIG
  // instance when the profile places none).
  [[nodiscard]] const GpuChooserPlugin* ChooserFor(const CycleState& cycle) const {
    return choosers_[static_cast<size_t>(cycle.kind())];
  }

  explicit Profile(std::vector<WeightedPlugin> plugins);

  // Run's stages (profile_run.cc).
  class Stages;
  // The GPUs of `node` the GPU exclusion plugins rule out for the pod.
  [[nodiscard]] GpuIndexList ExcludedGpus(const CycleState& cycle, const NodeView& node) const;
  // ChooseGpus once ExcludedGpus is known: ChooseGpus(c, n) is
  // ChooseGpusAvoiding(c, n, ExcludedGpus(c, n)).
  [[nodiscard]] std::optional<GpuChoice> ChooseGpusAvoiding(const CycleState& cycle, const NodeView& node,
                                                            const GpuIndexList& excluded) const;
  // The node filters' and the request's chooser's verdicts, in profile
  // order (Filter before the GPUs ruled out and the set filter).
  [[nodiscard]] FilterVerdict FilterByPlugins(const CycleState& cycle, const NodeView& node) const;
  // The memoizable answer for one node (NodeAnswer), into `answer`.
  void Answer(const CycleState& cycle, const NodeView& node, bool filter, NodeAnswer& answer) const;
  // Score plugin `scorer`'s raw (not yet normalised) score of one node
  // (`choice.chooser_score` when `scorer` is the request's chooser and it gave one).
  [[nodiscard]] int64_t RawScore(size_t scorer, const CycleState& cycle, const NodeView& node,
                                 const GpuChoice& choice) const;

  std::vector<WeightedPlugin> plugins_;
  std::vector<FilterStep> filters_;
  std::vector<const GpuExclusionPlugin*> excluders_;
  std::vector<WeightedScorer> scorers_;
  std::vector<const ReservePlugin*> reservers_;
  std::array<const GpuChooserPlugin*, kGpuRequestKinds> choosers_{};  // by kind
  const GpuSetChooserPlugin* gpu_set_ = nullptr;        // optional
  const GpuSetFilterPlugin* gpu_set_filter_ = nullptr;  // optional; gpu_set_'s plugin
  bool node_filters_memoizable_ = true;                  // every node filter is Memoizable()
  bool memoizable_ = true;                               // see memoizable()
};

// Defined here so that Filter and Run inline it: it runs on every node.
inline FilterVerdict Profile::FilterByPlugins(const CycleState& cycle, const NodeView& node) const {
  const GpuRequestKind kind = cycle.kind();
  if (kind == GpuRequestKind::kMigInstance && ChooserFor(cycle) == nullptr) {
    return FilterVerdict::Never("no_mig_placement",
                                "the pod asks for a MIG instance and the scheduling policy places none (its profile "
                                "has no MIG chooser, such as mig-partition)");
  }
  // What a pod on the node holds is unknown: no plugin can tell what is
  // free, so no GPU pod goes there until it is resolved (ClusterModel).
  if (node.gpus_withheld != nullptr && kind != GpuRequestKind::kNone) {
    return FilterVerdict::NotNow("gpus_unaccounted", *node.gpus_withheld);
  }
  for (const FilterStep& f : filters_) {
    FilterVerdict v;
    if (f.node != nullptr) {
      v = f.node->FilterNode(cycle, node);
    } else if (f.kind == kind) {  // another kind (or no GPU asked): not this chooser's to fit
      v = f.chooser->FilterGpus(cycle, node);
    } else {
      continue;
    }
    if (!v.ok()) return v;
  }
  return FilterVerdict::Success();
}

}  // namespace tessera
