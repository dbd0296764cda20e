// random: one node picked uniformly at random among those that fit.
//
// The FGD paper's Random baseline ("random-fit"): every fitting node gets a
// pseudo-random key, a hash of the plugin's `seed`, the pod's salt and the
// node's name; normalisation gives the node with the highest key the full
// score and every other node 0. Stateless and reproducible: the same pod
// (salt) on the same nodes always draws the same node.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

class RandomScorePlugin final : public Plugin, public ScorePlugin, public NormalizeScorePlugin {
 public:
  static constexpr std::string_view kName = "random";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Score: one fitting node at random, reproducibly (the FGD paper's Random baseline).";

  /// Reads `seed` (integer ≥ 0, default 0), mixed into every key.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Scores nodes; reads only the request (its salt included) and the
  /// node's state (memoizable).
  explicit RandomScorePlugin(uint64_t seed) : Plugin(/*memoizable=*/true), seed_(seed) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  /// A random draw reads nothing of the request but its salt: it scores every kind.
  [[nodiscard]] bool Scores(GpuRequestKind) const override { return true; }
  /// The node's key, in [0, 2^62).
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  /// The highest key gets kMaxPluginScore (the first of equal ones), all others 0.
  void NormalizeScores(absl::Span<int64_t> scores) const override;

 private:
  uint64_t seed_;
};

}  // namespace tessera
