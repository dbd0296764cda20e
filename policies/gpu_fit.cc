#include "policies/gpu_fit.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "scheduler/framework/plugin_args.h"
#include "policies/stable_hash.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> GpuFitPlugin::New(PluginArgs& args) {
  const std::string selection = args.Enum("gpuSelection", {"best", "random"}, "best");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuFitPlugin>(selection == "random" ? GpuSelection::kRandom : GpuSelection::kBest);
}

FilterVerdict GpuFitPlugin::Filter(const PodGpuRequest& r, const NodeView& node) const {
  if (r.count <= 0) return FilterVerdict::Success();
  return fit_.Filter(r, node);
}

std::optional<GpuChoice> GpuFitPlugin::ChooseGpus(const PodGpuRequest& r, const NodeView& node) const {
  if (r.count <= 0) return std::optional<GpuChoice>(std::in_place);  // asks for no GPU: none to choose
  if (selection_ == GpuSelection::kBest || r.whole_gpu || r.count != 1) return fit_.ChooseGpus(r, node);
  std::optional<RankedGpus> ranked = RankGpus(r, node);
  if (!ranked.has_value() || ranked->empty()) return std::nullopt;
  GpuChoice choice;
  choice.gpu_indices.push_back(ranked->front().index);
  return choice;
}

std::optional<RankedGpus> GpuFitPlugin::RankGpus(const PodGpuRequest& r, const NodeView& node) const {
  if (r.count > 0 && (selection_ == GpuSelection::kBest || r.whole_gpu || r.count != 1)) {
    return fit_.RankGpus(r, node);
  }
  return RankByHash(r, node);
}

std::optional<RankedGpus> GpuFitPlugin::RankByHash(const PodGpuRequest& r, const NodeView& node) const {
  std::optional<RankedGpus> ranked(std::in_place);  // one object on every path: see FgdPlugin::RankShareOfOneGpu
  if (r.count <= 0) return ranked;                   // asks for no GPU: none to rank
  // A share of one GPU: the fitting GPUs by their hash with the pod and the
  // node, highest first (each its own tier: the hash is the preference).
  struct Hashed {
    int32_t index;
    uint64_t hash;
  };
  absl::InlinedVector<Hashed, 8> fitting;
  const uint64_t node_hash = StableHash(r.salt, node.name);
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (!fit_.FitsOneGpu(r, node, i)) continue;
    const int32_t index = node.gpu_states[i].index;
    fitting.push_back({index, MixBits(node_hash ^ static_cast<uint64_t>(index))});
  }
  std::stable_sort(fitting.begin(), fitting.end(), [](const Hashed& a, const Hashed& b) { return a.hash > b.hash; });
  for (size_t i = 0; i < fitting.size(); ++i) {
    ranked->push_back(RankedGpu{.index = fitting[i].index, .tier = static_cast<int32_t>(i)});
  }
  return ranked;
}

std::vector<GpuShare> GpuFitPlugin::SharesFor(const PodGpuRequest& r, const NodeView& node,
                                              const GpuChoice& choice) const {
  if (r.count <= 0) return {};
  return fit_.SharesFor(r, node, choice);
}

}  // namespace tessera
