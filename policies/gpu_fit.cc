#include "policies/gpu_fit.h"

#include "config/plugin_args.h"
#include "policies/stable_hash.h"

namespace tessera {

bool FitsOnGpu(const GpuSharePlugin& fit, const PodGpuRequest& request, const NodeView& node,
               const GpuDevice& gpu) {
  // gpu-share's own choice on the node cut down to this one GPU: the same
  // rules, without a second copy of them.
  NodeView one = node;
  one.gpus = absl::MakeConstSpan(&gpu, 1);
  return fit.ChooseGpus(request, one).has_value();
}

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
  // A share of one GPU: the fitting GPU with the highest hash.
  std::optional<int32_t> chosen;
  uint64_t best = 0;
  const uint64_t node_hash = StableHash(r.salt, node.name);
  for (const GpuDevice& g : node.gpus) {
    if (!FitsOnGpu(fit_, r, node, g)) continue;
    const uint64_t h = MixBits(node_hash ^ static_cast<uint64_t>(g.index));
    if (!chosen.has_value() || h > best) {
      best = h;
      chosen = g.index;
    }
  }
  if (!chosen.has_value()) return std::nullopt;
  GpuChoice choice;
  choice.gpu_indices.push_back(*chosen);
  return choice;
}

std::vector<GpuShare> GpuFitPlugin::SharesFor(const PodGpuRequest& r, const NodeView& node,
                                              const GpuChoice& choice) const {
  if (r.count <= 0) return {};
  return fit_.SharesFor(r, node, choice);
}

}  // namespace tessera
