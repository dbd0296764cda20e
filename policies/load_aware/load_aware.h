// load-aware: steers pods away from GPUs that are busy in fact, by live
// metrics (NodeView::telemetry, kept current by telemetry/), not
// only by what pods reserved.
//
// Assumptions
//   - Telemetry may be missing, partial or stale. A GPU without a fresh
//     measurement (now > fresh_until) is unknown: it scores neutral and is
//     never rejected. Missing data is never a penalty.
//   - A measurement cannot show pods bound after it was taken (nor, for
//     `podWarmupSeconds`, pods bound shortly before: they are still starting
//     and the averages lag). Their load is estimated from their reservation.
//   - The GPU chooser (gpu-share) picks the GPUs among those this plugin
//     has not ruled out; this plugin scores the choice.
//
// Per chosen GPU (all values per-mille of one GPU)
//   measured  = weighted mean of the short window (SM activity instead when
//               `useSmActive` and reported) and the sustained window
//   estimate  = guaranteed x guaranteedEstimatePercent
//             + (limit - guaranteed) x burstEstimatePercent
//   predicted = measured + estimates of the pods bound since the sample
//   demand    = predicted + the pod's own estimate (whole-GPU pods: none:
//               they get the GPU to themselves)
//   compute   = 1000 - min(1000, demand)
//   memory    = 1000 - (used + reserved by pods bound since + pod's) / (used + free)
//   score     = (utilizationWeight x compute + memoryWeight x memory) / (sum of weights)
//               x (1 - hotSpotPenaltyPercent x (demand - T) / (1000 - T)) when demand > T
//               (T = hotSpotThresholdPercent): load past T costs more and more
// Node score: the mean over the chosen GPUs in 0..100, an unknown GPU
// counting `neutralScore`.
//
// GPU exclusion (each part optional): rules single GPUs out for the pod, so
// the GPU chooser picks among the others (GpuExclusionPlugin in plugin.h)
//   - rejectBusyGpus (off by default): a GPU whose sustained utilisation is
//     above busyThresholdPercent: "GPU 2 at 97% utilisation (5m avg) above the
//     90% threshold".
//   - memoryGuard (on by default): a GPU whose measured free memory, less what
//     pods bound since the sample reserved, is below the pod's guaranteed
//     memory (processes Tessera does not account for use it).
//   Filter, prioritize and bind all choose GPUs without them. A node is
//   rejected (not now) when fewer than `count` GPUs with room for the pod by
//   reservation are left, and then the GPUs ruled out are named; GPUs without
//   room are left to gpu-share, which explains them better.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/framework/plugin.h"

namespace tessera {

class PluginArgs;

/// The validated args of load-aware.
struct LoadAwareArgs {
  int64_t utilization_weight = 2;
  int64_t memory_weight = 1;
  int64_t short_window_weight = 2;
  int64_t long_window_weight = 1;
  bool use_sm_active = true;
  int64_t guaranteed_estimate_percent = 100;
  int64_t burst_estimate_percent = 50;
  absl::Duration pod_warmup = absl::Seconds(60);
  int64_t hot_spot_threshold_percent = 80;
  int64_t hot_spot_penalty_percent = 50;
  int64_t neutral_score = 50;
  bool reject_busy_gpus = false;
  int64_t busy_threshold_percent = 90;
  bool memory_guard = true;
};

class LoadAwarePlugin final : public Plugin, public GpuExclusionPlugin, public ScorePlugin {
 public:
  static constexpr std::string_view kName = "load-aware";
  /// One line for docs/reference/policy-file.md.
  static constexpr std::string_view kSummary =
      "GPU exclusion and score by live GPU metrics: steer pods away from GPUs that are busy in fact.";
  /// Reasons of its rejections (tessera_filter_rejections_total's label).
  static constexpr std::string_view kBusyReason = "gpu_busy";
  static constexpr std::string_view kMemoryReason = "gpu_memory_in_use";

  /// The clock freshness is judged by; tests pass a fixed one.
  using Clock = absl::Time (*)();

  /// Wall time from CLOCK_REALTIME_COARSE: a few ns per read where
  /// absl::Now() costs ~70 ns here, at a resolution (a jiffy, ~4 ms) far
  /// finer than any TTL. Plugins get no per-request context, so the clock is
  /// read once per node scored: 5000 nodes x 70 ns would be a third of the
  /// prioritize budget.
  static absl::Time CoarseNow();

  /// Reads the args listed in LoadAwareArgs (camelCase: utilizationWeight,
  /// podWarmupSeconds, rejectBusyGpus, ...) from `args`.
  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args);

  /// Rules GPUs out and scores nodes by live telemetry and the clock: not
  /// memoizable.
  explicit LoadAwarePlugin(LoadAwareArgs args, Clock clock = &CoarseNow)
      : Plugin(/*memoizable=*/false), args_(args), clock_(clock) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  void ExcludeGpus(const CycleState& cycle, const NodeView& node, GpuIndexList& excluded) const override;
  [[nodiscard]] FilterVerdict ExplainExcluded(const CycleState& cycle, const NodeView& node) const override;
  [[nodiscard]] int64_t ScoreNode(const CycleState& cycle, const NodeView& node,
                                  const GpuChoice& choice) const override;

  [[nodiscard]] const LoadAwareArgs& args() const { return args_; }

 private:
  enum class Exclusion { kNone, kBusy, kMemory };
  // Whether the pod can have any GPU ruled out on `node` (cheap: no GPU visited).
  [[nodiscard]] bool MayExclude(const CycleState& cycle, const NodeView& node) const;
  struct Judgement {
    Exclusion exclusion;
    int64_t recent_memory_mib;  ///< What pods bound since the sample reserved (worked out for kMemory only).
  };
  // Whether fresh GPU `g` of `node` is ruled out for the pod, and why.
  [[nodiscard]] Judgement Judge(const PodGpuRequest& request, const NodeView& node, const GpuTelemetry& g) const;

  const LoadAwareArgs args_;
  const Clock clock_;
};

}  // namespace tessera
