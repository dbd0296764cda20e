#include "policies/load_aware/load_aware.h"

#include <time.h>

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"

namespace tessera {
namespace {

constexpr size_t kMaxListedGpus = 4;

bool Known(int64_t v) { return v >= 0; }

// The pod-independent load estimate of a share, in per-mille of one GPU.
int64_t Estimate(const LoadAwareArgs& a, MilliGpu guaranteed, MilliGpu limit) {
  const int64_t burst = std::max<int64_t>(0, (limit - guaranteed).value());
  return (guaranteed.value() * a.guaranteed_estimate_percent + burst * a.burst_estimate_percent) / 100;
}

// The GPU's measured load: the short window (SM activity when asked for and
// reported) blended with the sustained one; nullopt when neither is known.
std::optional<int64_t> Measured(const LoadAwareArgs& a, const GpuTelemetry& g) {
  const int64_t short_window =
      a.use_sm_active && Known(g.sm_active.value()) ? g.sm_active.value() : g.utilization.value();
  const int64_t long_window = g.sustained_utilization.value();
  const bool has_short = Known(short_window), has_long = Known(long_window);
  if (has_short && has_long && a.short_window_weight + a.long_window_weight > 0) {
    return (short_window * a.short_window_weight + long_window * a.long_window_weight) /
           (a.short_window_weight + a.long_window_weight);
  }
  if (has_short) return short_window;
  if (has_long) return long_window;
  return std::nullopt;
}

// The load the busy threshold judges: the sustained window, else the short one.
int64_t BusyLoad(const GpuTelemetry& g) {
  return Known(g.sustained_utilization.value()) ? g.sustained_utilization.value() : g.utilization.value();
}

// What pods bound to GPU `index` since its sample (less the warm-up) add:
// their estimated load and their reserved memory.
struct Recent {
  int64_t load = 0;
  int64_t memory_mib = 0;
};

Recent RecentOn(const LoadAwareArgs& a, const NodeView& node, int32_t index, absl::Time sampled_at) {
  Recent r;
  const absl::Time cutoff = sampled_at - a.pod_warmup;
  for (const GpuBinding& b : node.bindings) {  // newest first
    if (b.bound_at <= cutoff) break;
    if (b.index != index) continue;
    r.load += Estimate(a, b.guaranteed, b.limit);
    r.memory_mib += b.memory.value();
  }
  return r;
}

// "97 percent" or "97.5 percent": words, not '%', which kube-scheduler
// would take for a format verb in the reason (k8s/extender_results.h).
std::string Percent(int64_t per_mille) {
  if (per_mille % 10 == 0) return absl::StrCat(per_mille / 10, " percent");
  return absl::StrCat(per_mille / 10, ".", per_mille % 10, " percent");
}

// Whether the pod could go on this GPU by what pods reserved (the chooser's
// business; checked here only so that load-aware counts the GPUs that matter).
bool HasRoom(const PodGpuRequest& r, const GpuDevice& gpu, const GpuUsage& u) {
  if (r.whole_gpu) return u.idle();
  if (u.guaranteed + r.guaranteed > kOneGpu) return false;
  return !gpu.memory_known() || u.memory + r.memory <= gpu.memory;
}

}  // namespace

absl::Time LoadAwarePlugin::CoarseNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return absl::TimeFromTimespec(ts);
}

absl::StatusOr<std::unique_ptr<Plugin>> LoadAwarePlugin::New(PluginArgs& args) {
  LoadAwareArgs a;
  a.utilization_weight = args.Int("utilizationWeight", 0, 100, a.utilization_weight,
                                  "Weight of the compute left on the chosen GPUs in the score.");
  a.memory_weight = args.Int("memoryWeight", 0, 100, a.memory_weight, "Weight of the measured memory left in the score.");
  if (a.utilization_weight + a.memory_weight == 0) {
    args.Error("memoryWeight", "utilizationWeight and memoryWeight cannot both be 0");
  }
  a.short_window_weight = args.Int("shortWindowWeight", 0, 100, a.short_window_weight,
                                   "Weight of the short window's utilisation (or SM activity) in the measured load.");
  a.long_window_weight = args.Int("longWindowWeight", 0, 100, a.long_window_weight,
                                  "Weight of the sustained window's utilisation in the measured load.");
  if (a.short_window_weight + a.long_window_weight == 0) {
    args.Error("longWindowWeight", "shortWindowWeight and longWindowWeight cannot both be 0");
  }
  a.use_sm_active = args.Bool("useSmActive", a.use_sm_active,
                               "Use SM activity for the short window where the GPU reports it (a truer load than utilisation).");
  a.guaranteed_estimate_percent = args.Int("guaranteedEstimatePercent", 0, 200, a.guaranteed_estimate_percent,
                                   "Load a pod bound since the sample is assumed to add, in percent of its guaranteed share.");
  a.burst_estimate_percent = args.Int("burstEstimatePercent", 0, 100, a.burst_estimate_percent,
                                   "Load assumed of the part of its burst limit above its guaranteed share, in percent.");
  a.pod_warmup = absl::Seconds(args.Int("podWarmupSeconds", 0, 3600, absl::ToInt64Seconds(a.pod_warmup),
                                             "Seconds a newly bound pod is still counted by its estimate: it is starting and the averages lag."));
  a.hot_spot_threshold_percent = args.Int("hotSpotThresholdPercent", 1, 99, a.hot_spot_threshold_percent,
                                   "Predicted load past which each further per-mille costs more (the hot-spot penalty starts).");
  a.hot_spot_penalty_percent = args.Int("hotSpotPenaltyPercent", 0, 100, a.hot_spot_penalty_percent,
                                   "Share of the score a GPU at full predicted load loses past the hot-spot threshold.");
  a.neutral_score = args.Int("neutralScore", 0, kMaxPluginScore, a.neutral_score,
                             "Score of a GPU with no fresh measurement (missing data is never a penalty).");
  a.reject_busy_gpus = args.Bool("rejectBusyGpus", a.reject_busy_gpus,
                                  "Rule out GPUs whose sustained utilisation is above busyThresholdPercent.");
  a.busy_threshold_percent = args.Int("busyThresholdPercent", 1, 100, a.busy_threshold_percent,
                                    "Sustained utilisation above which rejectBusyGpus rules a GPU out.");
  a.memory_guard = args.Bool("memoryGuard", a.memory_guard,
                               "Rule out GPUs whose measured free memory, less what pods bound since reserved, is below the pod's guaranteed memory.");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<LoadAwarePlugin>(a);
}

LoadAwarePlugin::Judgement LoadAwarePlugin::Judge(const PodGpuRequest& r, const NodeView& node,
                                                   const GpuTelemetry& g) const {
  if (args_.reject_busy_gpus) {
    const int64_t load = BusyLoad(g);
    if (Known(load) && load > args_.busy_threshold_percent * 10) return {Exclusion::kBusy, 0};
  }
  if (args_.memory_guard && r.memory.value() > 0 && Known(g.memory_free.value())) {
    const int64_t free_mib = g.memory_free.value();
    // Pods bound since the sample reserved at most what all pods reserve on
    // the GPU: the bindings are walked only when that much could decide.
    if (free_mib - node.UsageOf(g.index).memory.value() < r.memory.value()) {
      const int64_t recent_mib = RecentOn(args_, node, g.index, g.sampled_at).memory_mib;
      if (free_mib - recent_mib < r.memory.value()) return {Exclusion::kMemory, recent_mib};
    }
  }
  return {Exclusion::kNone, 0};
}

bool LoadAwarePlugin::MayExclude(const CycleState& cycle, const NodeView& node) const {
  return node.telemetry != nullptr && node.inventory_ok() &&
         (args_.reject_busy_gpus || (args_.memory_guard && cycle.request().memory.value() > 0));
}

void LoadAwarePlugin::ExcludeGpus(const CycleState& cycle, const NodeView& node, GpuIndexList& excluded) const {
  if (!MayExclude(cycle, node)) return;
  const PodGpuRequest& r = cycle.request();
  const NodeTelemetry& t = *node.telemetry;
  // Fresh means sampled at or after this (one time subtraction per node, not per GPU).
  const absl::Time fresh_since = clock_() - t.stale_after;
  // The measured GPUs only: an unmeasured one is never ruled out, nor a stale
  // one. (An index not in the inventory is harmless: no chooser ranks it.)
  for (const GpuTelemetry& g : t.gpus) {
    if (g.sampled_at >= fresh_since && Judge(r, node, g).exclusion != Exclusion::kNone) excluded.push_back(g.index);
  }
}

FilterVerdict LoadAwarePlugin::ExplainExcluded(const CycleState& cycle, const NodeView& node) const {
  if (!MayExclude(cycle, node)) return FilterVerdict::Success();
  const PodGpuRequest& r = cycle.request();
  const NodeTelemetry& t = *node.telemetry;
  const absl::Time now = clock_();
  size_t listed = 0;
  bool any_busy = false;
  std::string why;
  for (const GpuDevice& gpu : node.gpus) {
    // GPUs without room by reservation are gpu-share's to explain.
    if (!HasRoom(r, gpu, node.UsageOf(gpu.index))) continue;
    const GpuTelemetry* measured = t.Find(gpu.index);
    if (measured == nullptr || !t.Fresh(*measured, now)) continue;
    const GpuTelemetry& g = *measured;
    const auto [e, recent_mib] = Judge(r, node, g);
    if (e == Exclusion::kNone) continue;
    any_busy = any_busy || e == Exclusion::kBusy;
    if (++listed > kMaxListedGpus) continue;
    if (listed > 1) why += "; ";
    if (e == Exclusion::kBusy) {
      const bool sustained = Known(g.sustained_utilization.value());
      absl::StrAppend(&why, "GPU ", gpu.index, " at ", Percent(BusyLoad(g)), " utilisation (",
                      sustained ? t.sustained_window : t.utilization_window, ") above the ",
                      args_.busy_threshold_percent, " percent threshold");
    } else {
      absl::StrAppend(&why, "GPU ", gpu.index, " has ", std::max<int64_t>(0, g.memory_free.value() - recent_mib),
                      " MiB of memory free in fact (measured",
                      Known(g.memory_used.value()) ? absl::StrCat(", ", g.memory_used.value(), " MiB in use") : "",
                      "), pod needs ", r.memory.value(), " MiB");
    }
  }
  if (listed == 0) return FilterVerdict::Success();
  if (listed > kMaxListedGpus) {
    const size_t more = listed - kMaxListedGpus;
    absl::StrAppend(&why, " (and ", more, more == 1 ? " more GPU)" : " more GPUs)");
  }
  return FilterVerdict::NotNow(any_busy ? kBusyReason : kMemoryReason, std::move(why));
}

int64_t LoadAwarePlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  const PodGpuRequest& r = cycle.request();
  const NodeTelemetry* t = node.telemetry;
  if (t == nullptr || choice.gpu_indices.empty()) return args_.neutral_score;
  const absl::Time now = clock_();
  const int64_t neutral = args_.neutral_score * 10;
  const int64_t own_load = r.whole_gpu ? 0 : Estimate(args_, r.guaranteed, r.limit);
  const int64_t hot_above = args_.hot_spot_threshold_percent * 10;
  int64_t total = 0;
  for (const int32_t index : choice.gpu_indices) {
    const GpuTelemetry* g = t->Find(index);
    if (g == nullptr || !t->Fresh(*g, now)) {
      total += neutral;
      continue;
    }
    const std::optional<int64_t> measured = Measured(args_, *g);
    const bool has_memory = Known(g->memory_used.value()) && Known(g->memory_free.value()) &&
                            g->memory_used.value() + g->memory_free.value() > 0;
    if (!measured && !has_memory) {
      total += neutral;
      continue;
    }
    const Recent recent = RecentOn(args_, node, index, g->sampled_at);
    int64_t weighted = 0, weights = 0;
    int64_t demand = 0;
    if (measured) {
      demand = *measured + recent.load + own_load;
      weighted += args_.utilization_weight * (1000 - std::min<int64_t>(1000, demand));
      weights += args_.utilization_weight;
    }
    if (has_memory) {
      const int64_t capacity = g->memory_used.value() + g->memory_free.value();
      const int64_t used = std::min(capacity, g->memory_used.value() + recent.memory_mib + r.memory.value());
      weighted += args_.memory_weight * (1000 - used * 1000 / capacity);
      weights += args_.memory_weight;
    }
    int64_t score = weights > 0 ? weighted / weights : neutral;
    if (demand > hot_above) {
      const int64_t excess = std::min<int64_t>(1000, (demand - hot_above) * 1000 / (1000 - hot_above));
      score = score * (100'000 - args_.hot_spot_penalty_percent * excess) / 100'000;
    }
    total += score;
  }
  const int64_t per_mille = total / static_cast<int64_t>(choice.gpu_indices.size());
  return std::clamp<int64_t>((per_mille + 5) / 10, 0, kMaxPluginScore);
}

}  // namespace tessera
