#include "sim/node_choice.h"

#include "policies/stable_hash.h"

namespace tessera::sim {

uint64_t SaltOf(uint64_t seed, size_t position) { return MixBits(MixBits(seed) ^ static_cast<uint64_t>(position)); }

void Evaluate(const Profile& profile, const CycleState& cycle, const NodeView& node, Verdict& v,
              absl::Span<int64_t> raw) {
  v.fits = profile.Filter(cycle, node).ok();
  if (!v.fits) return;
  std::optional<GpuChoice> choice = profile.ChooseGpus(cycle, node);
  v.fits = choice.has_value();
  if (!v.fits) return;
  v.choice = *std::move(choice);
  for (size_t s = 0; s < raw.size(); ++s) raw[s] = profile.RawScore(s, cycle, node, v.choice);
}

void EvaluateNodes(const Profile& profile, const CycleState& cycle, const Cluster& cluster, bool memoised,
                   std::vector<Verdict>& verdict, std::vector<int64_t>& memo_raw, std::vector<uint32_t>& feasible,
                   std::vector<std::vector<int64_t>>& scores) {
  const size_t k = scores.size();
  feasible.clear();
  for (auto& s : scores) s.clear();
  for (size_t i = 0; i < cluster.size(); ++i) {
    Verdict& v = verdict[i];
    if (!memoised || v.version != cluster.version(i)) {
      Evaluate(profile, cycle, cluster.View(i), v, absl::MakeSpan(memo_raw.data() + i * k, k));
      v.version = cluster.version(i);
    }
    if (!v.fits) continue;
    feasible.push_back(static_cast<uint32_t>(i));
    for (size_t s = 0; s < k; ++s) scores[s].push_back(memo_raw[i * k + s]);
  }
}

size_t BestNode(const Profile& profile, const std::vector<uint32_t>& feasible,
                std::vector<std::vector<int64_t>>& scores, const std::vector<uint32_t>& rank,
                std::vector<int64_t>& totals) {
  totals.assign(feasible.size(), 0);
  for (size_t s = 0; s < scores.size(); ++s) profile.AddWeighted(s, absl::MakeSpan(scores[s]), absl::MakeSpan(totals));
  size_t best = 0;
  for (size_t j = 1; j < feasible.size(); ++j) {
    if (totals[j] > totals[best] || (totals[j] == totals[best] && rank[feasible[j]] < rank[feasible[best]])) best = j;
  }
  return feasible[best];
}

}  // namespace tessera::sim
