// gpu-share: fractional GPUs.
//
// Assumptions
//   - A pod reserves its *guaranteed* compute and memory on each of its GPUs:
//     on every GPU, Σ guaranteed ≤ 1000 milli and Σ memory ≤ card memory less
//     the per-GPU reserve. Burst limits may overcommit up to `max_limit_percent`.
//   - A pod without a fraction wants whole GPUs: each must be idle.
//   - A node's inventory comes with the request or the snapshot; what pods hold
//     comes from the snapshot (NodeView joins them).
//
// Algorithm, per node
//   1. Classify every GPU: model refused; unhealthy (the node's agent found
//      it broken: no pod goes there); too small for the pod even when idle
//      (memory); fits now; or full now (with the first reason why).
//   2. Filter: fewer than `count` GPUs that could ever fit -> never
//      (FailedAndUnresolvableNodes); fewer than `count` that fit now -> not now.
//   3. Choose: order the GPUs that fit now by
//        (a) burst room first, if the pod bursts: GPUs where every pod, this
//            one included, can reach its limit at once;
//        (b) binpack: least free compute left after placement (fills partly
//            used GPUs before opening idle ones, which keeps whole GPUs free);
//            spread: most free compute left;
//        (c) the same for memory; (d) lower device index;
//      and take the first `count`. With a GPU set plugin in the profile
//      (nvlink-topology), this order is its ranking (RankGpus) and the set
//      plugin picks the `count` GPUs among all that fit.
//   4. Score: the node's guaranteed-compute utilisation after placement, in
//      per-mille (binpack) or its complement (spread), normalised min-max over
//      the candidates to 0..100 so the best node gets the full score.
//
// A pod that asks for no GPU (a CPU-only pod) is the profile's to decide: it
// passes every node and gets no GPU there. gpu-share scores it 0 everywhere:
// it has no GPU-based preference for it (else binpack would pull CPU-only
// pods onto busy GPU nodes, and spread onto idle ones, ahead of nodes
// without GPUs).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/model/gpu_model.h"  // GpuModelMatches, which gpu-share filters by
#include "scheduler/model/quantity.h"

namespace tessera {

class PluginArgs;

/// Pack pods onto few nodes/GPUs, or spread them out.
enum class PlacementStrategy { kBinpack, kSpread };

/// The validated args of gpu-share.
struct GpuShareArgs {
  PlacementStrategy node_strategy = PlacementStrategy::kBinpack;
  PlacementStrategy gpu_strategy = PlacementStrategy::kBinpack;
  /// Memory held back on every GPU (driver, CUDA context of the runtime).
  MemoryMiB memory_reserve{0};
  /// Cap on Σ burst limits on one GPU, in percent of the GPU (100 = no overcommit).
  int64_t max_limit_percent = 200;
  /// Cap on Σ memory limits on one GPU, in percent of its usable memory.
  int64_t max_memory_limit_percent = 100;
};

/// Whether the pod accepts `gpu`: its vendor among the pod's vendors, its
/// model among the accepted models and none of the refused ones (an empty
/// list accepts every vendor or model). Every chooser that fits GPUs asks it.
bool GpuAccepted(const CycleState& cycle, const GpuDevice& gpu);

class GpuSharePlugin final : public Plugin, public GpuChooserPlugin, public ScorePlugin, public NormalizeScorePlugin {
 public:
  static constexpr std::string_view kName = "gpu-share";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Fractional GPUs: filter, GPU choice and score by guaranteed share, burst limit and GPU memory.";

  /// Reads nodeStrategy, gpuStrategy, gpuMemoryReserve, maxLimitPercent and
  /// maxMemoryLimitPercent from `args`.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Chooses GPUs (steps 1-3) and scores nodes (step 4); reads only the
  /// request and the node's state (memoizable).
  explicit GpuSharePlugin(GpuShareArgs args)
      : Plugin(/*memoizable=*/true), args_(args) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const override;
  /// The GPUs that fit now in the order of step 3, one tier per equal (a)-(c).
  void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const override;
  [[nodiscard]] std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const override;
  /// What the pod would hold on each chosen GPU (for the assignment annotation).
  [[nodiscard]] std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const override;
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  void NormalizeScores(absl::Span<int64_t> scores) const override;

  /// Whether GPU `position` of `node` (in inventory order) can take one
  /// GPU's worth of the pod now (model, compute, memory, burst limits): the
  /// test ChooseGpus puts each GPU to.
  [[nodiscard]] bool FitsOneGpu(const CycleState& cycle, const NodeView& node, size_t position) const;

  [[nodiscard]] const GpuShareArgs& args() const { return args_; }

 private:
  GpuShareArgs args_;
};

}  // namespace tessera
