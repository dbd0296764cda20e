// best-fit: prefer the node that the pod leaves with the least free.
//
// The FGD paper's BestFit baseline (best_fit_score.go).
//
// Algorithm, per node
//   leftover = 0.5 · (cpu_free − cpu) / 128000 + 0.5 · (gpu_free − gpu) / 8000
//   raw      = trunc(100 · (1 − leftover))          (float64, as the paper's code)
//   then min–max normalised over the fitting nodes to 0..100 (all 0 when
//   every raw score is equal). gpu_free is Σ free milli-GPU, gpu the pod's
//   count × milli; CPU terms are 0 where host resources are unknown.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class BestFitPlugin final : public Plugin, public ScorePlugin, public NormalizeScorePlugin {
 public:
  static constexpr std::string_view kName = "best-fit";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: the node the pod leaves with the least free (the FGD paper's BestFit baseline).";

  /// Takes no args.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request and the node's state (memoizable).
  BestFitPlugin() : Plugin(/*memoizable=*/true) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  void NormalizeScores(absl::Span<int64_t> scores) const override;
};

/// kube-scheduler's min–max normalisation to 0..kMaxPluginScore, integer
/// division as Go's; all 0 when the scores are all equal.
void MinMaxNormalize(absl::Span<int64_t> scores);

}  // namespace tessera
