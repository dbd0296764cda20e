#include "scheduler/framework/plugin.h"

namespace tessera {

// The defaults a chooser may keep.

FilterVerdict GpuChooserPlugin::FilterGpus(const CycleState&, const NodeView&) const {
  return FilterVerdict::Success();
}

std::optional<GpuChoice> GpuChooserPlugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  RankedGpus ranked;
  RankGpus(cycle, node, ranked);
  const size_t count = cycle.gpu_count();
  if (ranked.size() < count) return std::nullopt;
  GpuChoice choice;
  for (size_t i = 0; i < count; ++i) choice.gpu_indices.push_back(ranked[i].index);
  return choice;
}

std::vector<GpuShare> GpuChooserPlugin::SharesFor(const CycleState& cycle, const NodeView&, const GpuChoice& choice) const {
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

}  // namespace tessera
