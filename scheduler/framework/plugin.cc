#include "scheduler/framework/plugin.h"

namespace tessera {

// The defaults: what a plugin that does not implement a point would answer
// were it asked. The profile asks a plugin only the points it declares.

FilterVerdict Plugin::FilterNode(const CycleState&, const NodeView&) const { return FilterVerdict::Success(); }

FilterVerdict Plugin::FilterGpus(const CycleState&, const NodeView&) const { return FilterVerdict::Success(); }

void Plugin::RankGpus(const CycleState&, const NodeView&, RankedGpus&) const {}

std::optional<GpuChoice> Plugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  RankedGpus ranked;
  RankGpus(cycle, node, ranked);
  const size_t count = cycle.gpu_count();
  if (ranked.size() < count) return std::nullopt;
  GpuChoice choice;
  for (size_t i = 0; i < count; ++i) choice.gpu_indices.push_back(ranked[i].index);
  return choice;
}

std::vector<GpuShare> Plugin::SharesFor(const CycleState& cycle, const NodeView&, const GpuChoice& choice) const {
  const PodGpuRequest& r = cycle.request();
  std::vector<GpuShare> shares;
  shares.reserve(choice.gpu_indices.size());
  for (int32_t index : choice.gpu_indices) {
    shares.push_back(GpuShare{.index = index, .uuid = {}, .guaranteed = cycle.guaranteed_per_gpu(),
                              .limit = r.whole_gpu ? kOneGpu : r.limit, .memory = r.memory,
                              .memory_limit = cycle.memory_limit_per_gpu()});
  }
  return shares;
}

void Plugin::ExcludeGpus(const CycleState&, const NodeView&, GpuIndexList&) const {}

FilterVerdict Plugin::ExplainExcluded(const CycleState&, const NodeView&) const { return FilterVerdict::Success(); }

std::optional<GpuChoice> Plugin::ChooseGpuSet(const CycleState&, const NodeView&, const RankedGpus&) const {
  return std::nullopt;
}

FilterVerdict Plugin::FilterGpuSet(const CycleState&, const NodeView&, const GpuChoice&) const {
  return FilterVerdict::Success();
}

int64_t Plugin::ScoreNode(const CycleState&, const NodeView&, const GpuChoice&) const { return 0; }

}  // namespace tessera
