#include "policies/baselines/gpu_fit.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "scheduler/framework/plugin_args.h"
#include "policies/stable_hash.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> GpuFitPlugin::New(PluginArgs& args) {
  const std::string selection = args.Enum("gpuSelection", {"best", "random"}, "best",
                                               "Which GPU a one-GPU fractional pod gets on a node: the best fit, or one by the pod's hash.");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuFitPlugin>(selection == "random" ? GpuSelection::kRandom : GpuSelection::kBest);
}

bool GpuFitPlugin::ByHash(const PodGpuRequest& r) const {
  return selection_ == GpuSelection::kRandom && !r.whole_gpu && r.count == 1;
}

FilterVerdict GpuFitPlugin::FilterGpus(const CycleState& cycle, const NodeView& node) const {
  return fit_.FilterGpus(cycle, node);
}

std::optional<GpuChoice> GpuFitPlugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  if (!ByHash(cycle.request())) return fit_.ChooseGpus(cycle, node);
  RankedGpus ranked;
  RankByHash(cycle, node, ranked);
  if (ranked.empty()) return std::nullopt;
  GpuChoice choice;
  choice.gpu_indices.push_back(ranked.front().index);
  return choice;
}

void GpuFitPlugin::RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  if (ByHash(cycle.request())) return RankByHash(cycle, node, ranked);
  fit_.RankGpus(cycle, node, ranked);
}

void GpuFitPlugin::RankByHash(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  // A share of one GPU: the fitting GPUs by their hash with the pod and the
  // node, highest first (each its own tier: the hash is the preference).
  struct Hashed {
    int32_t index;
    uint64_t hash;
  };
  absl::InlinedVector<Hashed, 8> fitting;
  const uint64_t node_hash = StableHash(cycle.request().salt, node.name);
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (!fit_.FitsOneGpu(cycle, node, i)) continue;
    const int32_t index = node.gpu_states[i].index();
    fitting.push_back({index, MixBits(node_hash ^ static_cast<uint64_t>(index))});
  }
  std::stable_sort(fitting.begin(), fitting.end(), [](const Hashed& a, const Hashed& b) { return a.hash > b.hash; });
  for (size_t i = 0; i < fitting.size(); ++i) {
    ranked.push_back(RankedGpu{.index = fitting[i].index, .tier = static_cast<int32_t>(i)});
  }
}

std::vector<GpuShare> GpuFitPlugin::SharesFor(const CycleState& cycle, const NodeView& node,
                                              const GpuChoice& choice) const {
  return fit_.SharesFor(cycle, node, choice);
}

}  // namespace tessera
