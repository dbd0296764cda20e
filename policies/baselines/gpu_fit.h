// gpu-fit: where a pod's GPUs fit, and which GPUs it gets there; no score.
//
// The GPU filter and GPU choice of gpu-share (the same code), without
// gpu-share's node score, so that a profile can pair it with any score
// plugin: the placement baselines of the FGD paper are gpu-fit plus one
// score each (config/examples/placement/). A pod that asks for no GPU
// (count 0, the simulator's CPU-only pods) fits everywhere and gets none.
//
// GPU choice (`gpuSelection`)
//   - best: gpu-share's binpack choice; for a share, the GPU with the least
//     free compute that still fits, then the lower index; whole GPUs: the
//     idle ones in index order.
//   - random: for a share of one GPU, one of the GPUs it fits on, chosen by a
//     hash of the pod's salt, the node and the GPU (uniform, reproducible);
//     whole GPUs as `best`.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

/// How gpu-fit picks the GPU for a share of one GPU.
enum class GpuSelection { kBest, kRandom };

class GpuFitPlugin final : public Plugin, public GpuChooserPlugin {
 public:
  static constexpr std::string_view kName = "gpu-fit";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Filter and GPU choice of gpu-share without its score, to pair with any score plugin.";

  /// Reads `gpuSelection` (best | random, default best).
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Chooses GPUs; reads only the request (its salt included) and the
  /// node's state (memoizable).
  explicit GpuFitPlugin(GpuSelection selection)
      : Plugin(/*memoizable=*/true), selection_(selection), fit_(GpuShareArgs{}) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const override;
  void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const override;
  [[nodiscard]] std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const override;
  [[nodiscard]] std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const override;

 private:
  // Whether the GPU goes by hash (a share of one GPU, random selection).
  [[nodiscard]] bool ByHash(const PodGpuRequest& request) const;
  // RankGpus by hash.
  void RankByHash(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const;

  GpuSelection selection_;
  GpuSharePlugin fit_;  // gpu-share's fit and choice, with its defaults
};

}  // namespace tessera
