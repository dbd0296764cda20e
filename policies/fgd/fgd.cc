#include "policies/fgd/fgd.h"

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"
#include "policies/node_resources.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// A node as the measure reads it: free milli-GPU per GPU (inventory order),
// free CPU now, and free CPU once the pod has its CPU. The node after the
// pod takes its share of some GPUs is this with those entries lowered.
// With the GPU-memory measure, `fit` is each GPU's fit free (FitMilli);
// empty without it.
struct NodeFree {
  absl::InlinedVector<int64_t, 8> gpu;
  absl::InlinedVector<int64_t, 8> fit;
  std::optional<int64_t> cpu;
  std::optional<int64_t> cpu_after;
};

NodeFree FreeOf(const NodeView& node, const PodGpuRequest& r, const TargetWorkload::MemoryPerMilli& ratio) {
  NodeFree f;
  for (const GpuState& g : node.gpu_states) f.gpu.push_back(FreeMilli(g));
  if (ratio.memory > 0) {
    for (const GpuState& g : node.gpu_states) f.fit.push_back(FitMilli(g, 0, MemoryMiB(0), ratio));
  }
  if (node.host != nullptr) {
    f.cpu = node.host->cpu_free().value();
    f.cpu_after = *f.cpu - r.host.cpu.value();
  }
  return f;
}

int64_t ScoreOfDecrease(double decrease) {
  const double delta = decrease / 1000;
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta)) * static_cast<double>(kMaxPluginScore));
}

}  // namespace

int64_t FragmentationScore(double before, double after) { return ScoreOfDecrease(before - after); }

int64_t FragmentationScore(int64_t before_times_weight, int64_t after_times_weight, int64_t total_weight) {
  return ScoreOfDecrease(static_cast<double>(before_times_weight - after_times_weight) /
                         static_cast<double>(total_weight));
}

TargetWorkload::MemoryPerMilli MemoryRatio(const TargetWorkload& workload, const FragmentationOptions& options,
                                           const PodGpuRequest& r) {
  if (!options.gpu_memory) return {};
  TargetWorkload::MemoryPerMilli ratio = workload.memory_per_milli();
  // The workload (a prior written without memory, say) does not know: the
  // pod in hand is the evidence there is.
  if (ratio.memory <= 0 && r.count > 0 && PerGpuMilli(r) < kOneGpu.value() && r.memory.value() > 0) {
    ratio = {.memory = r.memory.value(), .milli = PerGpuMilli(r)};
  }
  if (ratio.memory <= 0 || ratio.milli <= 0) return {};
  // Both at most 2^30, so that FitMilli multiplies in 64 bits: the
  // workload's sums are Σ w·x and can pass that; halving both keeps the
  // ratio to within 2^-30.
  constexpr int64_t kMax = int64_t{1} << 30;
  while (ratio.memory > kMax || ratio.milli > kMax) {
    ratio.memory = std::max<int64_t>(ratio.memory >> 1, 1);
    ratio.milli = std::max<int64_t>(ratio.milli >> 1, 1);
  }
  return ratio;
}

int64_t PlacementFragmentationScore(const TargetWorkload& workload, const FragmentationOptions& options,
                                    const PodGpuRequest& r, const NodeView& node, const GpuChoice& choice) {
  return FragmentationScore(PlacementFragmentationDecrease(workload, options, r, node, choice), 0,
                            workload.total_weight());
}

int64_t PlacementFragmentationDecrease(const TargetWorkload& workload, const FragmentationOptions& options,
                                       const PodGpuRequest& r, const NodeView& node, const GpuChoice& choice) {
  const NodeGpuAccess access(workload, node.gpus);
  const TargetWorkload::MemoryPerMilli ratio = MemoryRatio(workload, options, r);
  NodeFree free = FreeOf(node, r, ratio);
  const int64_t before = NodeFragmentationTimesWeight(workload, access, free.gpu, free.cpu, options, free.fit);
  for (int32_t index : choice.gpu_indices) {
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpu_states[i].index() != index) continue;
      free.gpu[i] -= PerGpuMilli(r);
      if (!free.fit.empty()) free.fit[i] = FitMilli(node.gpu_states[i], PerGpuMilli(r), r.memory, ratio);
    }
  }
  return before - NodeFragmentationTimesWeight(workload, access, free.gpu, free.cpu_after, options, free.fit);
}

MeasureArgs ReadMeasureArgs(PluginArgs& args) {
  MeasureArgs m;
  m.kind_weights = args.Enum("kindWeights", {"pods", "gpus"}, "pods",
                             "Weigh each kind of the workload by its pods (pods) or by the GPUs its pods ask "
                             "(gpus).") == "gpus"
                       ? KindWeights::kPerGpuAsked
                       : KindWeights::kPerPod;
  m.cpu_only_asks = MilliGpu(kOneGpu.value() *
                             args.Int("cpuOnlyAsksGpus", 1, 64, m.cpu_only_asks.value() / kOneGpu.value(),
                                      "With kindWeights: gpus, the GPUs a kind asking none counts as asking; it sets "
                                      "only how large the score's differences are (10: measured on the Alibaba "
                                      "traces)."));
  m.gpu_memory = args.Enum("gpuMemory", {"ignore", "fit"}, "ignore",
                              "Count a GPU as fitting a kind by compute alone (ignore) or by compute and GPU memory (fit).") == "fit";
  return m;
}

namespace {

// fgd's own measure args: MeasureArgs and `leftover`.
MeasureArgs ReadFgdMeasureArgs(PluginArgs& args) {
  MeasureArgs m = ReadMeasureArgs(args);
  m.leftover_outlook = args.Enum("leftover", {"ignore", "outlook"}, "ignore",
                                  "Also weigh what the GPUs left after a placement could still take "
                                  "(outlook).") == "outlook";
  m.dead_leftover_weight = args.Int("deadLeftoverWeight", 0, 100, m.dead_leftover_weight,
                                    "With leftover: outlook, how many times its regret a share that leaves a shared "
                                    "GPU dead is charged (0: no charge; 6 measured best on the default trace).");
  m.dead.filled_milli = args.Int("filledMilli", 0, 500, m.dead.filled_milli,
                                 "With leftover: outlook, a leftover of at most this many milli-GPU is a filled "
                                 "GPU, not a dead one.");
  m.dead.rare_fit_percent = args.Int("rareFitPercent", 0, 100, m.dead.rare_fit_percent,
                                     "With leftover: outlook, kinds that together make less than this percent of "
                                     "the arrivals fill no leftover: what only they fit is dead.");
  return m;
}

}  // namespace

std::shared_ptr<const TargetWorkload> Weighed(std::shared_ptr<const TargetWorkload> workload,
                                              const MeasureArgs& measure) {
  if (measure.kind_weights == KindWeights::kPerPod) return workload;
  absl::StatusOr<TargetWorkload> weighed =
      TargetWorkload::Create(workload->pods(), measure.kind_weights, measure.cpu_only_asks);
  if (!weighed.ok()) return workload;
  // What the publisher saw of the cluster is no property of the weights.
  return std::make_shared<const TargetWorkload>(std::move(*weighed).WithCluster(workload->cluster_supply()));
}

std::optional<TargetWorkload> ReadWorkloadArg(PluginArgs& args, std::string_view key) {
  const bool present = args.Has(key);
  const std::vector<std::string> items = args.StringList(
      key, "Required: the kinds of pod the cluster expects, one per item, \"<count> cpu=<milli>m gpu=<milli>m\" (as in [\"1078 cpu=3152m gpu=810m\"]).");
  if (!present) {
    args.Error(key, "required: list the kinds of pod the cluster expects, as in [\"1078 cpu=3152m gpu=810m\"]");
    return std::nullopt;
  }
  std::vector<WorkloadPod> pods;
  bool ok = true;
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StatusOr<WorkloadPod> pod = ParseWorkloadPod(items[i]);
    if (!pod.ok()) {
      args.Error(key, absl::StrCat("item ", i, " \"", items[i], "\": ", pod.status().message()));
      ok = false;
      continue;
    }
    pods.push_back(*std::move(pod));
  }
  if (!ok) return std::nullopt;
  absl::StatusOr<TargetWorkload> workload = TargetWorkload::Create(std::move(pods));
  if (!workload.ok()) {
    args.Error(key, Std(workload.status().message()));
    return std::nullopt;
  }
  return *std::move(workload);
}

absl::StatusOr<std::unique_ptr<Plugin>> FgdPlugin::New(PluginArgs& args) {
  std::optional<TargetWorkload> workload = ReadWorkloadArg(args, "workload");
  const MeasureArgs measure = ReadFgdMeasureArgs(args);
  // gpu-share reads its own args and finishes: it reports any key neither read.
  absl::StatusOr<std::unique_ptr<Plugin>> fit = GpuSharePlugin::New(args);
  if (!fit.ok()) return fit.status();
  const auto* share = dynamic_cast<const GpuSharePlugin*>(fit->get());
  if (share == nullptr || !workload.has_value()) return absl::InternalError("fgd: gpu-share args unreadable");
  return std::make_unique<FgdPlugin>(*std::move(workload), share->args(), measure);
}

FilterVerdict FgdPlugin::FilterGpus(const CycleState& cycle, const NodeView& node) const {
  return fit_.FilterGpus(cycle, node);
}

absl::InlinedVector<FgdPlugin::GpuDecrease, 8> FgdPlugin::MeasureEachGpu(const CycleState& cycle,
                                                                          const NodeView& node) const {
  const PodGpuRequest& r = cycle.request();
  const size_t n = node.gpus.size();
  const int64_t share = PerGpuMilli(r);
  const FragmentationOptions options = MeasureOptions();
  const TargetWorkload::MemoryPerMilli ratio = MemoryRatio(*workload_, options, r);
  const NodeFree now = FreeOf(node, r, ratio);
  // The GPUs that can take the share, and of them those to measure: a GPU
  // like one measured already (same free, same fit free before and after,
  // and same model where the workload tells models apart) measures the same.
  // Per GPU the share fits on, with the GPU-memory measure: its fit free once it has the share.
  absl::InlinedVector<int64_t, 8> fit_after(now.fit.empty() ? 0 : n);
  const auto alike = [&](size_t a, size_t b) {
    return now.gpu[a] == now.gpu[b] && (now.fit.empty() || (now.fit[a] == now.fit[b] && fit_after[a] == fit_after[b])) &&
           (!workload_->has_models() || node.gpus[a].model == node.gpus[b].model);
  };
  absl::InlinedVector<size_t, 8> fitting;   // inventory positions
  absl::InlinedVector<size_t, 8> distinct;  // inventory positions to measure
  absl::InlinedVector<size_t, 8> like;      // per fitting GPU: its position in `distinct`
  for (size_t i = 0; i < n; ++i) {
    if (now.gpu[i] < share || !fit_.FitsOneGpu(cycle, node, i)) continue;
    if (!fit_after.empty()) fit_after[i] = FitMilli(node.gpu_states[i], share, r.memory, ratio);
    size_t d = 0;
    while (d < distinct.size() && !alike(distinct[d], i)) ++d;
    if (d == distinct.size()) distinct.push_back(i);
    fitting.push_back(i);
    like.push_back(d);
  }
  absl::InlinedVector<GpuDecrease, 8> measured;
  if (fitting.empty()) return measured;
  absl::InlinedVector<int64_t, 8> decreases(distinct.size());
  absl::InlinedVector<int64_t, 8> distinct_fit_after;
  for (size_t i : distinct) {
    if (!fit_after.empty()) distinct_fit_after.push_back(fit_after[i]);
  }
  const NodeGpuAccess access(*workload_, node.gpus);
  // The outlook's walk assumes every kind may fill every GPU (expected_waste.h).
  const bool outlook = outlook_ != nullptr && OutlookApplies(access);
  FragmentationDecreases(*workload_, access, now.gpu, now.cpu, now.cpu_after, share,
                         distinct, absl::MakeSpan(decreases), options, now.fit, distinct_fit_after);
  measured.resize(fitting.size());
  // Where CPU binds, what the share's CPU does to every GPU's outlook; the
  // GPU that takes the share is counted by OutlookDecrease instead.
  const bool cpu_cost = outlook && workload_->cpu_short();
  const int64_t cost_all = cpu_cost ? OutlookCpuCost(now.gpu, now.cpu, now.cpu_after) : 0;
  for (size_t k = 0; k < fitting.size(); ++k) {
    const int64_t free = now.gpu[fitting[k]];
    measured[k].index = node.gpu_states[fitting[k]].index();
    measured[k].decrease = decreases[like[k]] + (outlook ? ShareOutlook(free, share, now.cpu, now.cpu_after) : 0);
    if (cpu_cost) measured[k].decrease += cost_all - OutlookDecrease(free, 0, now.cpu, now.cpu_after);
  }
  return measured;
}

bool FgdPlugin::OutlookApplies(const NodeGpuAccess& access) { return access.uniform() && access.open(); }

int64_t FgdPlugin::OutlookDecrease(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                   std::optional<int64_t> cpu_after) const {
  if (outlook_ == nullptr) return 0;
  // A decrease is at most 1000 · kScale = 10^6 and the total weight ≤ 2^30: the product fits in 64 bits.
  return outlook_->DecreaseOf(free_milli, share, cpu_before, cpu_after) * workload_->total_weight() /
         ExpectedWaste::kScale;
}

int64_t FgdPlugin::ShareOutlook(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                std::optional<int64_t> cpu_after) const {
  return OutlookDecrease(free_milli, share, cpu_before, cpu_after) -
         DeadLeftoverCharge(free_milli, share, cpu_before, cpu_after);
}

int64_t FgdPlugin::DeadLeftoverCharge(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                      std::optional<int64_t> cpu_after) const {
  // An idle GPU displaces no partner: what a share leaves there is the walk's alone.
  if (outlook_ == nullptr || free_milli >= kOneGpu.value()) return 0;
  // A regret ≤ 1000, times at most 100, times the total weight ≤ 2^30: fits in 64 bits.
  return measure_.dead_leftover_weight * outlook_->DeadLeftoverRegret(free_milli, share, cpu_before, cpu_after) *
         workload_->total_weight();
}

int64_t FgdPlugin::OutlookCpuCost(absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_before,
                                  std::optional<int64_t> cpu_after) const {
  int64_t cost = 0;
  for (int64_t free : free_milli) cost += OutlookDecrease(free, 0, cpu_before, cpu_after);
  return cost;
}

int64_t FgdPlugin::ScoreOf(int64_t decrease) const {
  return FragmentationScore(decrease, 0, workload_->total_weight());
}

std::optional<GpuChoice> FgdPlugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  if (!SharesOneGpu(cycle.request())) return fit_.ChooseGpus(cycle, node);
  const absl::InlinedVector<GpuDecrease, 8> measured = MeasureEachGpu(cycle, node);
  if (measured.empty()) return std::nullopt;
  // The best score; the lowest index of those reaching it. The score grows
  // with the decrease, so the largest decrease has the best score, and only
  // GPUs before the first with that decrease need a score of their own.
  const int64_t most = std::max_element(measured.begin(), measured.end(), [](const GpuDecrease& a,
                                                                             const GpuDecrease& b) {
                         return a.decrease < b.decrease;
                       })->decrease;
  const int64_t best = ScoreOf(most);
  const auto chosen = std::find_if(measured.begin(), measured.end(), [&](const GpuDecrease& m) {
    return m.decrease == most || ScoreOf(m.decrease) == best;
  });
  GpuChoice choice;
  choice.gpu_indices.push_back(chosen->index);
  choice.chooser_score = best;  // what ScoreNode would say of it, worked out already
  return choice;
}

void FgdPlugin::RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  if (SharesOneGpu(cycle.request())) return RankShareOfOneGpu(cycle, node, ranked);
  fit_.RankGpus(cycle, node, ranked);
}

void FgdPlugin::RankShareOfOneGpu(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  struct GpuScore {
    int32_t index;
    int64_t score;
  };
  absl::InlinedVector<GpuScore, 8> scored;
  for (const GpuDecrease& m : MeasureEachGpu(cycle, node)) scored.push_back({m.index, ScoreOf(m.decrease)});
  // Best score first; equal scores keep index order (ChooseGpus' tie-break).
  std::stable_sort(scored.begin(), scored.end(), [](const GpuScore& a, const GpuScore& b) { return a.score > b.score; });
  int32_t tier = 0;
  for (size_t i = 0; i < scored.size(); ++i) {
    if (i > 0 && scored[i].score != scored[i - 1].score) ++tier;
    ranked.push_back(RankedGpu{.index = scored[i].index, .tier = tier});
  }
}

std::vector<GpuShare> FgdPlugin::SharesFor(const CycleState& cycle, const NodeView& node,
                                           const GpuChoice& choice) const {
  return fit_.SharesFor(cycle, node, choice);
}

int64_t FgdPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  const PodGpuRequest& r = cycle.request();
  int64_t decrease = PlacementFragmentationDecrease(*workload_, MeasureOptions(), r, node, choice);
  if (outlook_ != nullptr && SharesOneGpu(r) && OutlookApplies(NodeGpuAccess(*workload_, node.gpus))) {
    const NodeFree now = FreeOf(node, r, {});
    // As MeasureEachGpu counts it: the chosen GPU by its share, the others, where CPU binds, by the CPU taken.
    const bool cpu_cost = workload_->cpu_short();
    if (cpu_cost) decrease += OutlookCpuCost(now.gpu, now.cpu, now.cpu_after);
    for (int32_t index : choice.gpu_indices) {
      for (size_t i = 0; i < node.gpu_states.size(); ++i) {
        if (node.gpu_states[i].index() != index) continue;
        decrease += ShareOutlook(now.gpu[i], PerGpuMilli(r), now.cpu, now.cpu_after);
        if (cpu_cost) decrease -= OutlookDecrease(now.gpu[i], 0, now.cpu, now.cpu_after);
      }
    }
  }
  return ScoreOf(decrease);
}

std::shared_ptr<const TargetWorkload> MixedWithPrior(const TargetWorkload& learned, const TargetWorkload& prior) {
  return std::make_shared<const TargetWorkload>(learned.BlendedWith(prior, learned.prior_percent()));
}

}  // namespace tessera
