#include "sim/node_choice.h"

#include "policies/stable_hash.h"

namespace tessera::sim {

uint64_t SaltOf(uint64_t seed, size_t position) { return MixBits(MixBits(seed) ^ static_cast<uint64_t>(position)); }

void ClassAnswers::Clear() {
  answers_.clear();
  versions_.clear();
}

void ClassAnswers::Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found) {
  if (versions_.empty()) return;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (versions_[i] == cluster_->version(i)) found[i] = &answers_[i];
  }
}

void ClassAnswers::Keep(absl::Span<const NodeView* const> nodes, absl::Span<const size_t> computed_at,
                        std::vector<NodeAnswer>& computed) {
  if (versions_.empty()) {
    answers_.resize(nodes.size());
    versions_.assign(nodes.size(), 0);  // versions start at 1: 0 is none
  }
  for (size_t k = 0; k < computed_at.size(); ++k) {
    const size_t i = computed_at[k];
    answers_[i] = std::move(computed[k]);
    versions_[i] = cluster_->version(i);
  }
}

std::vector<const NodeView*> AllNodes(const Cluster& cluster) {
  std::vector<const NodeView*> nodes;
  nodes.reserve(cluster.size());
  for (const NodeView& view : cluster.views()) nodes.push_back(&view);
  return nodes;
}

RunResult EvaluateNodes(const Profile& profile, const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                        ClassAnswers* answers) {
  return profile.Run(cycle, nodes, RunOptions{.cache = answers, .filter = true, .parallel_for = nullptr, .min_parallel = 0},
                     nullptr);
}

size_t BestNode(const RunResult& run, const std::vector<uint32_t>& rank) {
  const std::vector<size_t>& fitting = run.fitting;
  const std::vector<int64_t>& totals = run.totals;
  size_t best = 0;
  for (size_t j = 1; j < fitting.size(); ++j) {
    if (totals[j] > totals[best] || (totals[j] == totals[best] && rank[fitting[j]] < rank[fitting[best]])) best = j;
  }
  return fitting[best];
}

GpuChoice ChoiceOn(const Profile& profile, const CycleState& cycle, const NodeView& node) {
  GpuChoice chosen;
  if (std::optional<GpuChoice> choice = profile.ChooseGpus(cycle, node)) chosen.gpu_indices = choice->gpu_indices;
  return chosen;
}

std::optional<GpuChoice> FitOn(const Profile& profile, const CycleState& cycle, const NodeView& node) {
  if (!profile.Filter(cycle, node).ok()) return std::nullopt;
  return profile.ChooseGpus(cycle, node);
}

}  // namespace tessera::sim
