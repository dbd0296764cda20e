// fgd: Fragmentation Gradient Descent (Weng et al., ATC '23).
//
// Places each pod where the node's GPU fragmentation under a target
// workload (policies/fgd/fragmentation.h) grows least, and on the GPU of that
// node where it grows least. The target workload, the kinds of pod the
// cluster expects and how often, is the plugin's `workload` arg; the
// placement simulator fills it from the trace it replays.
//
// Assumptions
//   - Fit, GPU accounting and whole-GPU choice are gpu-share's (the same
//     code; fgd takes gpu-share's args for them, e.g. gpuMemoryReserve).
//   - Memory enters the measure only with `gpuMemory: fit` (below); CPU
//     does where the node's host resources are known (NodeView::host),
//     else CPU never falls short.
//
// Args beyond the workload and gpu-share's (MeasureArgs; both default to
// the paper's FGD, and Tessera's default policy turns both on):
//   kindWeights: pods | gpus   each kind weighs its arrivals (the paper), or
//                              its arrivals ÷ the GPUs it asks
//                              (KindWeights::kPerGpuAsked)
//   gpuMemory: ignore | fit    whether a shared GPU's free memory limits
//                              the shares it is judged to fit
//                              (fragmentation.h, "GPU memory")
//   leftover: ignore | outlook whether a share of one GPU also counts how
//                              much it lowers its GPU's expected final
//                              waste (policies/fgd/expected_waste.h) beside the
//                              fragmentation it removes: of two GPUs a
//                              share fits, the one it leaves fillable; and
//                              on a GPU it shares, is charged
//                              deadLeftoverWeight times what it leaves
//                              there dead beyond what the best-fitting kind
//                              would (ExpectedWaste::DeadLeftoverRegret: too
//                              much to call the GPU full, fit only by rare kinds)
//
// Algorithm, per node
//   1. Filter: gpu-share's.
//   2. Choose: a share of one GPU tries every GPU it fits on and takes the
//      best score below (the first GPU reaching it); other pods take
//      gpu-share's choice (the lowest idle GPUs). RankGpus orders the GPUs
//      the same way, for a GPU set chooser or GPU exclusion beside fgd.
//   3. Score: Δ = F(node now) − F(node after placing the pod on the chosen
//      GPUs, CPU included); score = trunc(100 · σ(Δ / 1000)), σ the
//      logistic function: no change scores 50, less fragmentation more.
//      With `leftover: outlook`, a share of one GPU adds to Δ how much it
//      lowers that GPU's expected waste (milli-GPU, the same scale).
//      A share of one GPU was scored while choosing: the choice carries its
//      score (GpuChoice::chooser_score) and the profile does not ask again.
//
// Cost: step 2 measures the node now and after each distinct GPU it could
// take (GPUs of one model and one free amount count once), and nothing more.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "policies/fgd/expected_waste.h"
#include "policies/fgd/fragmentation.h"
#include "policies/gpu_share/gpu_share.h"
#include "policies/node_resources.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/workload_aware.h"

namespace tessera {

class PluginArgs;

/// How fgd and host-stranding measure beyond the workload (their args
/// `kindWeights` and `gpuMemory`; see above).
struct MeasureArgs {
  KindWeights kind_weights = KindWeights::kPerPod;
  /// With kindWeights: gpus, what a kind asking no GPU counts as asking
  /// (`cpuOnlyAsksGpus`): it sets only the scale of fgd's differences.
  MilliGpu cpu_only_asks = MilliGpu(10 * kOneGpu.value());
  bool gpu_memory = false;
  // fgd only: the leftover outlook and what makes a leftover dead.
  bool leftover_outlook = false;
  /// `deadLeftoverWeight`: how many times its regret a share that leaves a
  /// shared GPU dead is charged (ExpectedWaste::DeadLeftoverRegret): the
  /// leftover is lost, and the GPU's better partner, whose place the share
  /// took, must break a GPU of its own. Measured on the default trace (10
  /// seeds, Alloc %(100)): 4× 96.09, 6× 96.10, 8× 96.12, 12× 96.13, 16×
  /// 96.07; without (0), 95.92.
  int64_t dead_leftover_weight = 6;
  ExpectedWaste::Options dead;  ///< `filledMilli`, `rareFitPercent`
};

/// Reads `kindWeights`, `cpuOnlyAsksGpus` and `gpuMemory`.
MeasureArgs ReadMeasureArgs(PluginArgs& args);

/// `workload` with its kinds weighed as `measure` says (the same workload
/// when by arrivals, or should reweighing fail, which a valid workload does not).
std::shared_ptr<const TargetWorkload> Weighed(std::shared_ptr<const TargetWorkload> workload,
                                              const MeasureArgs& measure);

/// What a plugin measures against once `learned` is published: the learned
/// mix with the plugin's own list (`prior`) blended in at the share the
/// learner asks (TargetWorkload::prior_percent; WorkloadLearning).
std::shared_ptr<const TargetWorkload> MixedWithPrior(const TargetWorkload& learned, const TargetWorkload& prior);

class FgdPlugin final : public Plugin, public GpuChooserPlugin, public ScorePlugin, public WorkloadAware {
 public:
  static constexpr std::string_view kName = "fgd";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "Filter, GPU choice and score: where the node's GPU fragmentation under the expected workload grows least (FGD, ATC '23); gpu-share's args apply.";

  /// Reads `workload`, a list of workload items (required; see
  /// fragmentation.h), then gpu-share's args for the fit.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Chooses GPUs and scores nodes; reads only the request and the node's
  /// state (memoizable).
  /// `workload` as the arrivals' mix: the plugin weighs it as `measure` says.
  explicit FgdPlugin(TargetWorkload workload, GpuShareArgs fit = {}, MeasureArgs measure = {})
      : FgdPlugin(std::make_shared<const TargetWorkload>(std::move(workload)), fit, measure) {}
  /// `prior`: the policy file's list, which learned mixes are blended with
  /// (WithWorkload); null: `workload` is that list.
  FgdPlugin(std::shared_ptr<const TargetWorkload> workload, GpuShareArgs fit, MeasureArgs measure = {},
            std::shared_ptr<const TargetWorkload> prior = nullptr)
      : Plugin(/*memoizable=*/true),
        prior_(prior != nullptr ? std::move(prior) : workload),
        outlook_(measure.leftover_outlook ? std::make_shared<const ExpectedWaste>(*workload, measure.dead) : nullptr),
        workload_(Weighed(std::move(workload), measure)),
        fit_(fit),
        measure_(measure) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  [[nodiscard]] FilterVerdict FilterGpus(const CycleState& cycle, const NodeView& node) const override;
  void RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const override;
  [[nodiscard]] std::optional<GpuChoice> ChooseGpus(const CycleState& cycle, const NodeView& node) const override;
  [[nodiscard]] std::vector<GpuShare> SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const override;
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;
  /// fgd with the same fit, measuring against `workload` (a learned mix)
  /// with its own list blended in (MixedWithPrior).
  [[nodiscard]] std::shared_ptr<const Plugin> WithWorkload(
      std::shared_ptr<const TargetWorkload> workload) const override {
    return std::make_shared<const FgdPlugin>(MixedWithPrior(*workload, *prior_), fit_.args(), measure_, prior_);
  }
  /// The workload it measures against (weighed).
  [[nodiscard]] const TargetWorkload& workload() const { return *workload_; }
  [[nodiscard]] const TargetWorkload& MeasuredWorkload() const override { return *workload_; }

 private:
  // A GPU a share of one GPU fits on, and how much F · W falls when the
  // share goes there (negative: F grows).
  struct GpuDecrease {
    int32_t index;
    int64_t decrease;
  };
  // Every GPU the share fits on, in index order.
  [[nodiscard]] absl::InlinedVector<GpuDecrease, 8> MeasureEachGpu(const CycleState& cycle,
                                                                   const NodeView& node) const;
  // RankGpus for a share of one GPU: by score, from MeasureEachGpu.
  void RankShareOfOneGpu(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const;
  // The measure's options: the paper's, with GPU memory as `gpuMemory` says.
  [[nodiscard]] FragmentationOptions MeasureOptions() const {
    return {.host_stranding = false, .gpu_memory = measure_.gpu_memory};
  }
  // FGD's score of a decrease of F · W.
  [[nodiscard]] int64_t ScoreOf(int64_t decrease) const;
  // With the outlook: what it says of a share of `share` on the GPU with
  // `free_milli` free that takes it (F · W's units): how much the share
  // lowers the GPU's expected waste, less its dead-leftover charge. What
  // choosing a GPU and scoring the node both add.
  [[nodiscard]] int64_t ShareOutlook(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                     std::optional<int64_t> cpu_after) const;
  // With the outlook: what a share of `share` on a GPU with `free_milli`
  // free is charged (F · W's units) when the GPU is shared already:
  // deadLeftoverWeight times its regret (ExpectedWaste::DeadLeftoverRegret);
  // else 0.
  [[nodiscard]] int64_t DeadLeftoverCharge(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                           std::optional<int64_t> cpu_after) const;
  // With the outlook: how much a share of one GPU lowers the expected waste
  // of a GPU with `free_milli` free, on a node with `cpu_before` free CPU
  // before the pod and `cpu_after` after (nullopt: unknown), in F · W's
  // units (milli-GPU × weight); else 0.
  [[nodiscard]] int64_t OutlookDecrease(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                        std::optional<int64_t> cpu_after) const;
  // With the outlook: what the node's CPU falling from `cpu_before` to
  // `cpu_after` does to the expected waste of GPUs with `free_milli` free
  // (≤ 0: kinds the CPU no longer hosts stop filling them), in the same units.
  [[nodiscard]] int64_t OutlookCpuCost(absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_before,
                                       std::optional<int64_t> cpu_after) const;
  // Whether the outlook's walk holds on a node: every kind that asks for
  // GPUs may use every GPU of it (kinds that name models make it a guess
  // elsewhere: on the Alibaba traces whose pods do, counting it on every
  // node cost up to 0.27 points of Alloc).
  [[nodiscard]] static bool OutlookApplies(const NodeGpuAccess& access);

  std::shared_ptr<const TargetWorkload> prior_;     // the policy file's list, by arrivals
  // Declared before workload_: built from the workload by arrivals, before it is weighed.
  std::shared_ptr<const ExpectedWaste> outlook_;    // null without `leftover: outlook`
  std::shared_ptr<const TargetWorkload> workload_;  // never null; weighed
  GpuSharePlugin fit_;
  MeasureArgs measure_;
};

/// Reads a `workload` arg into a TargetWorkload, recording each bad item at
/// `key` (shared by the plugins that take a workload).
std::optional<TargetWorkload> ReadWorkloadArg(PluginArgs& args, std::string_view key);

/// FGD's score of a change in fragmentation: trunc(100 · σ((before − after) / 1000)).
int64_t FragmentationScore(double before, double after);
/// The same from F · W (NodeFragmentationTimesWeight), with the difference taken exactly.
int64_t FragmentationScore(int64_t before_times_weight, int64_t after_times_weight, int64_t total_weight);

/// F · W of `node` now less F · W once `request` is on its GPUs `choice`
/// (positions absent from the node are ignored), under `workload` measured
/// with `options` (with gpu_memory, each GPU judged by FitMilli).
int64_t PlacementFragmentationDecrease(const TargetWorkload& workload, const FragmentationOptions& options,
                                       const PodGpuRequest& request, const NodeView& node, const GpuChoice& choice);

/// FGD's score of that decrease.
int64_t PlacementFragmentationScore(const TargetWorkload& workload, const FragmentationOptions& options,
                                    const PodGpuRequest& request, const NodeView& node, const GpuChoice& choice);

/// The memory-per-milli ratio the measure judges GPU memory by: none
/// without options.gpu_memory; the workload's where its shares ask memory;
/// else, where the pod in hand shares a GPU and asks memory, the pod's.
/// Both parts halved together until at most 2^30 (FitMilli's 64-bit
/// products): the ratio to within 2^-30.
TargetWorkload::MemoryPerMilli MemoryRatio(const TargetWorkload& workload, const FragmentationOptions& options,
                                           const PodGpuRequest& request);

/// What GPU `gpu`'s free is judged by for fitting a share once a pod takes
/// `milli` and `memory` of it (fragmentation.h, "GPU memory"): its free
/// milli-GPU, or, where it is shared, its memory known and the workload's
/// shares ask memory, the milli-GPU its free memory is worth at `ratio` if
/// that is less. Never below 0. `ratio` as MemoryRatio gives it (both parts
/// at most 2^30). Inline: fgd calls it twice per GPU per node it measures.
inline int64_t FitMilli(const GpuState& gpu, int64_t milli, MemoryMiB memory,
                        const TargetWorkload::MemoryPerMilli& ratio) {
  const int64_t free = std::max<int64_t>(FreeMilli(gpu) - milli, 0);
  // An idle GPU fits what it fitted (a whole-GPU pod asks none of its memory).
  if (ratio.memory <= 0 || !gpu.memory_known() || free == 0 || free >= kOneGpu.value()) return free;
  const int64_t memory_free = std::max<int64_t>(gpu.memory().value() - gpu.memory_held().value() - memory.value(), 0);
  // memory_free < 2^31 MiB, both ratio parts ≤ 2^30: the products fit in 64
  // bits. Where memory does not bind (most GPUs) the comparison answers.
  const int64_t worth_times_memory = memory_free * ratio.milli;
  if (worth_times_memory >= free * ratio.memory) return free;
  return worth_times_memory / ratio.memory;
}

}  // namespace tessera
