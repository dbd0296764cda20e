#include "sim/node_choice.h"

#include "policies/stable_hash.h"

namespace tessera::sim {

uint64_t SaltOf(uint64_t seed, size_t position) { return MixBits(MixBits(seed) ^ static_cast<uint64_t>(position)); }

void ClassAnswers::Clear() {
  answers_.clear();
  versions_.clear();
}

void ClassAnswers::Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
                        std::vector<size_t>& missing) {
  if (versions_.empty()) {  // the class's first pod
    for (size_t i = 0; i < nodes.size(); ++i) {
      found[i] = nullptr;
      missing.push_back(i);
    }
    return;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool kept = versions_[i] == cluster_->version(i);
    found[i] = kept ? &answers_[i] : nullptr;
    if (!kept) missing.push_back(i);
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

void EvaluateNodes(const Profile& profile, const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                   ClassAnswers* answers, RunScratch& scratch, RunResult& run) {
  const RunOptions options{
      .cache = answers, .filter = true, .parallel_for = nullptr, .min_parallel = 0, .scratch = &scratch};
  profile.Run(cycle, nodes, options, nullptr, run);
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
