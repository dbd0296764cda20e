#include "policies/baselines/random_score.h"

#include <algorithm>
#include <limits>

#include "scheduler/framework/plugin_args.h"
#include "policies/stable_hash.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> RandomScorePlugin::New(PluginArgs& args) {
  const int64_t seed = args.Int("seed", 0, std::numeric_limits<int64_t>::max(), 0,
                                "Seed of the stable hash that scores nodes at random.");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<RandomScorePlugin>(static_cast<uint64_t>(seed));
}

int64_t RandomScorePlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice&) const {
  return static_cast<int64_t>(StableHash(MixBits(seed_) ^ cycle.request().salt, node.name) >> 2);
}

void RandomScorePlugin::NormalizeScores(absl::Span<int64_t> scores) const {
  if (scores.empty()) return;
  const auto winner = std::max_element(scores.begin(), scores.end());
  for (auto it = scores.begin(); it != scores.end(); ++it) *it = it == winner ? kMaxPluginScore : 0;
}

}  // namespace tessera
