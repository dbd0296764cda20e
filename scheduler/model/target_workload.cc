#include "scheduler/model/target_workload.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_model.h"
#include "scheduler/model/quantity_parse.h"

namespace tessera {
namespace {

constexpr int64_t kMaxCount = 1'000'000'000;
// One GPU's free milli-GPU is 0..1000: tables by free amount have this many rows.
constexpr size_t kFrees = static_cast<size_t>(kOneGpu.value()) + 1;

bool ParsePositive(std::string_view digits, int64_t max, int64_t& out) {
  return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         absl::SimpleAtoi(Absl(digits), &out) && out >= 0 && out <= max;
}

absl::Status ParseCpu(std::string_view v, WorkloadPod& pod) {
  int64_t n = 0;
  if (!v.empty() && v.back() == 'm' && ParsePositive(v.substr(0, v.size() - 1), kMaxCount, n)) {
    pod.cpu = MilliCpu(n);
    return absl::OkStatus();
  }
  if (ParsePositive(v, kMaxCount / 1000, n)) {
    pod.cpu = MilliCpu(n * 1000);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("cpu=", Absl(v), ": must be milli-CPU such as 3152m or whole cores such as 12"));
}

absl::Status ParseGpu(std::string_view v, WorkloadPod& pod) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu=", Absl(v), ": must be a share of one GPU such as 810m, whole GPUs such as 2, or GPUs of a share such as 2x500m"));
  };
  int64_t count = 1, milli = 0;
  std::string_view share = v;
  if (const size_t x = v.find('x'); x != std::string_view::npos) {
    if (!ParsePositive(v.substr(0, x), 64, count) || count == 0) return bad();
    share = v.substr(x + 1);
    if (share.empty() || share.back() != 'm') return bad();
  }
  if (!share.empty() && share.back() == 'm') {
    if (!ParsePositive(share.substr(0, share.size() - 1), 1000, milli) || milli == 0) return bad();
  } else {
    if (!ParsePositive(share, 64, count)) return bad();
    milli = count == 0 ? 0 : kOneGpu.value();
  }
  pod.gpus = static_cast<int32_t>(count);
  pod.milli = MilliGpu(milli);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkloadPod> ParseWorkloadPod(std::string_view text) {
  std::vector<std::string_view> words;
  for (absl::string_view w : absl::StrSplit(Absl(text), ' ', absl::SkipEmpty())) words.push_back(Std(w));
  WorkloadPod pod;
  if (words.empty() || !ParsePositive(words[0], kMaxCount, pod.weight) || pod.weight == 0) {
    return absl::InvalidArgumentError(
        "must start with a positive integer weight, as in \"1078 cpu=3152m gpu=810m\"");
  }
  bool has_cpu = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    const std::string_view key = words[i].substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : words[i].substr(eq + 1);
    absl::Status st;
    if (key == "cpu") {
      st = ParseCpu(value, pod);
      has_cpu = true;
    } else if (key == "gpu") {
      st = ParseGpu(value, pod);
    } else if (key == "gpumem") {
      absl::StatusOr<MemoryMiB> memory = k8s::ParseMemoryQuantity(value);
      if (!memory.ok() || memory->value() <= 0 || memory->value() > kMaxCount) {
        st = absl::InvalidArgumentError(absl::StrCat("gpumem=", Absl(value),
                                                     ": must be GPU memory per GPU such as 12Gi or 12288Mi"));
      } else {
        pod.gpu_memory = *memory;
      }
    } else if (key == "models") {
      for (absl::string_view m : absl::StrSplit(Absl(value), '|', absl::SkipEmpty())) pod.models.emplace_back(Std(m));
      if (pod.models.empty()) st = absl::InvalidArgumentError("models=: list at least one model, as in models=V100M16|V100M32");
    } else {
      st = absl::InvalidArgumentError(absl::StrCat("unknown field \"", Absl(words[i]), "\"; known: cpu=, gpu=, gpumem=, models="));
    }
    if (!st.ok()) return st;
  }
  if (!has_cpu) return absl::InvalidArgumentError("cpu= is required (cpu=0 for none)");
  if (pod.gpu_memory.value() > 0 && pod.gpus == 0) return absl::InvalidArgumentError("gpumem= needs gpu=");
  return pod;
}

std::string FormatWorkloadPod(const WorkloadPod& pod) {
  std::string s = absl::StrCat(pod.weight, " cpu=", pod.cpu.value(), "m");
  if (pod.gpus > 0) {
    if (pod.milli == kOneGpu) {
      absl::StrAppend(&s, " gpu=", pod.gpus);
    } else if (pod.gpus == 1) {
      absl::StrAppend(&s, " gpu=", pod.milli.value(), "m");
    } else {
      absl::StrAppend(&s, " gpu=", pod.gpus, "x", pod.milli.value(), "m");
    }
  }
  if (pod.gpu_memory.value() > 0) absl::StrAppend(&s, " gpumem=", pod.gpu_memory.value(), "Mi");
  if (!pod.models.empty()) absl::StrAppend(&s, " models=", absl::StrJoin(pod.models, "|"));
  return s;
}

namespace {

// Σ weight, once every kind is well formed and the sum is in range.
absl::StatusOr<int64_t> ValidatedTotalWeight(const std::vector<WorkloadPod>& pods) {
  if (pods.empty()) return absl::InvalidArgumentError("a workload needs at least one kind of pod");
  int64_t total = 0;
  for (const WorkloadPod& p : pods) {
    if (p.weight <= 0) return absl::InvalidArgumentError(absl::StrCat("\"", FormatWorkloadPod(p), "\": weight must be positive"));
    if ((p.gpus == 0) != (p.milli.value() == 0) || p.milli > kOneGpu || p.gpus < 0 ||
        (p.gpus == 0 && p.gpu_memory.value() != 0) || p.gpu_memory.value() < 0 || p.gpu_memory.value() > kMaxCount) {
      return absl::InvalidArgumentError(absl::StrCat("\"", FormatWorkloadPod(p), "\": GPU count and share disagree"));
    }
    total += p.weight;  // each at most 10^9: no overflow before the check below
    if (total > TargetWorkload::kMaxTotalWeight) {
      return absl::InvalidArgumentError(absl::StrCat("the weights add up to more than ", TargetWorkload::kMaxTotalWeight,
                                                     "; scale them down (only their ratios matter)"));
    }
  }
  return total;
}

// The distinct shares and CPU levels, and for every free amount how many shares fit in it.
void SharesAndCpuLevels(const std::vector<WorkloadPod>& pods, TargetWorkload::Measure& measure) {
  for (const WorkloadPod& p : pods) {
    if (p.gpus > 0) measure.shares.push_back(p.milli.value());
    if (p.gpus > 0 && p.models.empty()) measure.cpu_levels.push_back(p.cpu.value());
  }
  for (std::vector<int64_t>* v : {&measure.shares, &measure.cpu_levels}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  measure.shares_within.resize(kFrees);
  for (size_t free = 0; free < measure.shares_within.size(); ++free) {
    measure.shares_within[free] = static_cast<uint16_t>(
        std::upper_bound(measure.shares.begin(), measure.shares.end(), static_cast<int64_t>(free)) -
        measure.shares.begin());
  }
}

// One group of kinds (same share and GPU count) while the groups are built.
struct GroupRows {
  TargetWorkload::Measure::Group group;
  std::vector<int64_t> weight_within_cpu;  // per rank
};

// The group of kinds of `share` and `gpus` in `groups` (kept in share, then
// GPU-count order), added empty when there is none yet.
GroupRows& GroupOf(std::vector<GroupRows>& groups, size_t share, int64_t gpus, size_t ranks) {
  const auto group = std::lower_bound(groups.begin(), groups.end(), std::make_pair(share, gpus),
                                      [](const GroupRows& g, const std::pair<size_t, int64_t>& key) {
                                        return std::make_pair(g.group.share, g.group.gpus) < key;
                                      });
  if (group != groups.end() && group->group.share == share && group->group.gpus == gpus) return *group;
  return *groups.insert(group, GroupRows{.group = {.share = share, .gpus = gpus, .weight = 0},
                                         .weight_within_cpu = std::vector<int64_t>(ranks, 0)});
}

// Sorts every kind into the CPU-only weight, the model-naming kinds or its
// group, and lays the groups' per-rank weights out flat.
void GroupKinds(const std::vector<WorkloadPod>& pods, TargetWorkload::Measure& measure) {
  const size_t ranks = measure.cpu_levels.size() + 1;
  std::vector<GroupRows> groups;
  for (size_t m = 0; m < pods.size(); ++m) {
    const WorkloadPod& p = pods[m];
    const size_t share = p.gpus == 0 ? 0
                                     : static_cast<size_t>(std::lower_bound(measure.shares.begin(), measure.shares.end(),
                                                                            p.milli.value()) - measure.shares.begin());
    measure.share_of.push_back(share);
    if (p.gpus == 0) {
      measure.cpu_only_weight += p.weight;
      measure.any_model_weight += p.weight;
      continue;
    }
    if (!p.models.empty()) {
      measure.model_kinds.push_back(m);
      continue;
    }
    GroupRows& rows = GroupOf(groups, share, p.gpus, ranks);
    rows.group.weight += p.weight;
    measure.any_model_weight += p.weight;
    // The kind counts at every rank whose level is at least its CPU.
    const auto level = static_cast<size_t>(
        std::lower_bound(measure.cpu_levels.begin(), measure.cpu_levels.end(), p.cpu.value()) -
        measure.cpu_levels.begin());
    for (size_t r = level + 1; r < ranks; ++r) rows.weight_within_cpu[r] += p.weight;
  }
  for (const GroupRows& rows : groups) {
    measure.groups.push_back(rows.group);
    measure.weight_within_cpu.insert(measure.weight_within_cpu.end(), rows.weight_within_cpu.begin(),
                                     rows.weight_within_cpu.end());
  }
}

// Each one-GPU group adds its weight from its share up: entered at the
// share, then summed along each rank's row (O(groups·ranks + ranks·1001)).
void RoomWeights(TargetWorkload::Measure& measure) {
  const size_t ranks = measure.cpu_levels.size() + 1;
  measure.room_weight.assign(ranks * kFrees, 0);
  for (size_t g = 0; g < measure.groups.size(); ++g) {
    const TargetWorkload::Measure::Group& group = measure.groups[g];
    if (group.gpus != 1) {
      measure.multi_gpu_groups.push_back(g);
      continue;
    }
    const auto from = static_cast<size_t>(measure.shares[group.share]);
    for (size_t r = 0; r < ranks; ++r) {
      measure.room_weight[r * kFrees + from] += static_cast<int32_t>(measure.weight_within_cpu[g * ranks + r]);
    }
  }
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t f = 1; f < kFrees; ++f) measure.room_weight[r * kFrees + f] += measure.room_weight[r * kFrees + f - 1];
  }
}

// Σ w·cpu over every kind : Σ w·GPUs·share. Σ w ≤ 2^30 and a kind asks at
// most ~2^20 milli-CPU and a few thousand milli-GPU: both fit in 64 bits.
TargetWorkload::CpuPerGpu DemandOf(const std::vector<WorkloadPod>& pods) {
  TargetWorkload::CpuPerGpu demand;
  for (const WorkloadPod& pod : pods) {
    demand.cpu += pod.weight * pod.cpu.value();
    demand.gpu += pod.weight * pod.gpus * pod.milli.value();
  }
  return demand;
}

bool AcceptsModel(const std::vector<std::string>& patterns, std::string_view model) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return GpuModelMatches(pattern, model); });
}

}  // namespace

TargetWorkload TargetWorkload::BlendedWith(const TargetWorkload& prior, int64_t prior_percent) const {
  prior_percent = std::clamp<int64_t>(prior_percent, 0, 100);
  if (prior_percent == 0 || prior.pods_.empty()) {
    TargetWorkload unblended = *this;
    unblended.prior_percent_ = 0;
    return unblended;
  }
  // Both sides scaled to parts of 2^24, well under kMaxTotalWeight.
  constexpr int64_t kWhole = int64_t{1} << 24;
  std::vector<WorkloadPod> pods;
  auto add = [&](const std::vector<WorkloadPod>& side, int64_t side_total, int64_t percent) {
    if (percent == 0) return;  // all prior: the learned kinds are left out, not kept at weight 1
    for (const WorkloadPod& kind : side) {
      const __int128 scaled = static_cast<__int128>(kind.weight) * kWhole * percent / (100 * side_total);
      WorkloadPod k = kind;
      k.weight = std::max<int64_t>(1, static_cast<int64_t>(scaled));
      auto same = std::find_if(pods.begin(), pods.end(), [&](const WorkloadPod& p) {
        WorkloadPod a = p, b = k;
        a.weight = b.weight = 0;
        return a == b;
      });
      if (same != pods.end()) {
        same->weight += k.weight;
      } else {
        pods.push_back(std::move(k));
      }
    }
  };
  add(pods_, total_weight_, 100 - prior_percent);
  add(prior.pods_, prior.total_weight_, prior_percent);
  absl::StatusOr<TargetWorkload> blended = Create(std::move(pods));
  if (!blended.ok()) return *this;  // not for valid sides: weights stay under kMaxTotalWeight
  return std::move(*blended).WithCluster(cluster_supply());
}

TargetWorkload TargetWorkload::WithPriorPercent(int64_t percent) && {
  prior_percent_ = std::clamp<int64_t>(percent, 0, 100);
  return std::move(*this);
}

TargetWorkload TargetWorkload::WithClusterCpu(CpuPerGpu cluster) const& {
  return TargetWorkload(*this).WithClusterCpu(cluster);
}

TargetWorkload TargetWorkload::WithClusterCpu(CpuPerGpu cluster) && {
  cluster_cpu_per_gpu_ = cluster;
  return std::move(*this);
}

std::vector<TargetWorkload::ModelDemand> TargetWorkload::ModelDemandOf(const std::vector<WorkloadPod>& pods) {
  std::vector<TargetWorkload::ModelDemand> demand;
  for (const WorkloadPod& pod : pods) {
    if (pod.models.empty() || pod.gpus == 0) continue;
    const int64_t milli = pod.weight * pod.gpus * pod.milli.value();
    auto same = std::find_if(demand.begin(), demand.end(),
                             [&](const TargetWorkload::ModelDemand& d) { return d.models == pod.models; });
    if (same != demand.end()) {
      same->milli += milli;
    } else {
      demand.push_back({.models = pod.models, .milli = milli});
    }
  }
  return demand;
}

TargetWorkload TargetWorkload::WithGpuModels(std::vector<ModelGpus> models) && {
  cluster_gpu_models_ = std::move(models);
  scarce_models_.clear();
  int64_t all_gpus = 0;
  for (const ModelGpus& m : cluster_gpu_models_) all_gpus += m.gpus;
  const int64_t asked = demand_cpu_per_gpu_.gpu;  // Σ arrivals · GPUs · share, every kind
  if (all_gpus <= 0 || asked <= 0) return std::move(*this);
  // With S all GPUs, s_m a model's, D all that is asked, and a kind's ask d
  // spread over the S_k GPUs of the models it accepts, m is scarce when
  //   Σ_k (d · s_m / S_k) / D ≥ ½ · s_m / S   ⇔   Σ_k 2 · S · d / S_k ≥ D
  // (s_m cancels). 2·S·d < 2^24 · 2^50 for any real cluster: 128 bits.
  const size_t n = cluster_gpu_models_.size();
  std::vector<__int128> taken(n, 0);
  std::vector<bool> accepts(n);
  for (const ModelDemand& d : model_demand_) {
    int64_t accepting = 0;
    for (size_t i = 0; i < n; ++i) {
      accepts[i] = AcceptsModel(d.models, cluster_gpu_models_[i].model);
      if (accepts[i]) accepting += cluster_gpu_models_[i].gpus;
    }
    if (accepting == 0) continue;  // it can run nowhere here: it takes nothing
    const __int128 part = static_cast<__int128>(2) * all_gpus * d.milli / accepting;
    for (size_t i = 0; i < n; ++i) {
      if (accepts[i]) taken[i] += part;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (cluster_gpu_models_[i].gpus > 0 && taken[i] >= asked) scarce_models_.push_back(cluster_gpu_models_[i].model);
  }
  return std::move(*this);
}

std::vector<TargetWorkload::WholeNodeKind> TargetWorkload::WholeNodeKindsOf(const std::vector<WorkloadPod>& pods) {
  std::vector<WholeNodeKind> kinds;
  for (const WorkloadPod& pod : pods) {
    if (pod.gpus < 2 || pod.milli < kOneGpu) continue;
    kinds.push_back({.gpus = pod.gpus, .cpu = pod.cpu.value(), .models = pod.models,
                     .milli = pod.weight * pod.gpus * kOneGpu.value(), .reserved = false});
  }
  return kinds;
}

TargetWorkload TargetWorkload::WithIdleNodes(std::vector<IdleNodes> idle, int64_t free_milli) && {
  cluster_idle_nodes_ = std::move(idle);
  cluster_free_milli_ = free_milli;
  const int64_t asked = demand_cpu_per_gpu_.gpu;  // Σ arrivals · GPUs · share, every kind
  for (WholeNodeKind& kind : whole_node_kinds_) {
    __int128 fits = 0;  // milli-GPU of the idle nodes it fits whole
    for (const IdleNodes& nodes : cluster_idle_nodes_) {
      if (nodes.gpus != kind.gpus || nodes.cpu_free < kind.cpu) continue;
      if (!kind.models.empty() && !AcceptsModel(kind.models, nodes.model)) continue;
      fits += static_cast<__int128>(nodes.gpus) * kOneGpu.value() * nodes.nodes;
    }
    // (d ÷ D) · free ≥ fits ÷ factor, cross-multiplied: d·free < 2^40 · 2^50
    // for any real cluster and mix, fits·D likewise: 128 bits.
    kind.reserved = asked > 0 && kIdleReserveFactor * static_cast<__int128>(kind.milli) * cluster_free_milli_ >=
                                     fits * asked;
  }
  return std::move(*this);
}

int64_t TargetWorkload::idle_node_reserve(int64_t gpus, int64_t cpu_free, std::string_view model) const {
  // The node takes one such pod: breaking it costs one, whichever kinds fit.
  return reserved_kinds_fitting(gpus, cpu_free, model, /*asking_more_than=*/-1) > 0 ? gpus * kOneGpu.value() : 0;
}

int64_t TargetWorkload::reserved_kinds_fitting(int64_t gpus, int64_t cpu_free, std::string_view model,
                                               int64_t asking_more_than) const {
  return std::count_if(whole_node_kinds_.begin(), whole_node_kinds_.end(), [&](const WholeNodeKind& kind) {
    return kind.reserved && kind.gpus == gpus && kind.cpu <= cpu_free && kind.cpu > asking_more_than &&
           (kind.models.empty() || AcceptsModel(kind.models, model));
  });
}

TargetWorkload::ClusterVerdict TargetWorkload::cluster_verdict() const {
  ClusterVerdict v{.cpu_short = cpu_short(), .models_plentiful = models_plentiful(), .reserved = {}};
  for (const WholeNodeKind& kind : whole_node_kinds_) v.reserved.push_back(kind.reserved);
  return v;
}

bool TargetWorkload::cpu_short() const {
  const CpuPerGpu& have = cluster_cpu_per_gpu_;
  const CpuPerGpu& asked = demand_cpu_per_gpu_;
  if (have.gpu <= 0 || asked.gpu <= 0) return false;
  // have.cpu / have.gpu < asked.cpu / asked.gpu, cross-multiplied in 128 bits.
  return static_cast<__int128>(have.cpu) * asked.gpu < static_cast<__int128>(asked.cpu) * have.gpu;
}

absl::StatusOr<TargetWorkload> TargetWorkload::Create(std::vector<WorkloadPod> pods) {
  absl::StatusOr<int64_t> total = ValidatedTotalWeight(pods);
  if (!total.ok()) return total.status();
  TargetWorkload w;
  w.total_weight_ = *total;
  // Σ w ≤ 2^30, a GPU pod asks at most 2^20 milli-CPU of any sane node and
  // at most a few thousand milli-GPU: both sums fit in 64 bits.
  w.demand_cpu_per_gpu_ = DemandOf(pods);
  w.model_demand_ = ModelDemandOf(pods);
  w.whole_node_kinds_ = WholeNodeKindsOf(pods);
  for (const WorkloadPod& pod : pods) {
    w.has_models_ = w.has_models_ || !pod.models.empty();
    if (pod.gpus == 0) continue;
    w.cpu_per_gpu_.cpu += pod.weight * pod.cpu.value();
    w.cpu_per_gpu_.gpu += pod.weight * pod.gpus * pod.milli.value();
    // Σ w ≤ 2^30 and memory ≤ 10^9 MiB: < 2^60.
    if (pod.milli < kOneGpu && pod.gpu_memory.value() > 0) {
      w.memory_per_milli_.memory += pod.weight * pod.gpu_memory.value();
      w.memory_per_milli_.milli += pod.weight * pod.milli.value();
    }
  }
  SharesAndCpuLevels(pods, w.measure_);
  GroupKinds(pods, w.measure_);
  RoomWeights(w.measure_);
  w.pods_ = std::move(pods);
  return w;
}

absl::StatusOr<TargetWorkload> TargetWorkload::Create(std::vector<WorkloadPod> pods, KindWeights weights,
                                                      MilliGpu cpu_only_asks) {
  if (weights == KindWeights::kPerPod) return Create(std::move(pods));
  if (absl::StatusOr<int64_t> total = ValidatedTotalWeight(pods); !total.ok()) return total.status();
  // weight · 64000 / (GPUs · share): exact for every GPU count up to 64 and
  // share that divides it, and ≥ the arrivals for the largest kind (64 whole GPUs).
  constexpr int64_t kScale = 64 * 1000;
  // A CPU-only kind asks no GPU. Wherever a GPU pod goes it adds the same
  // fragment (all free GPU is its), so its weight moves no node ahead of
  // another; it only sets how large fgd's differences are on the score's
  // scale (σ(ΔF / 1000)). Weighed by default as a kind asking 10 GPUs:
  // measured on the Alibaba traces and their stress variants, as one GPU or
  // as nothing (64) it lost to FGD on one of them (gpuspec10, node CPU ×
  // 0.75; docs/experiments/2026-11-26-kind-weights-and-gpu-memory.md).
  const int64_t cpu_only_milli = std::max<int64_t>(1, cpu_only_asks.value());
  __int128 total = 0;
  std::vector<__int128> scaled(pods.size());
  for (size_t m = 0; m < pods.size(); ++m) {
    const WorkloadPod& p = pods[m];
    const int64_t asked = p.gpus == 0 ? cpu_only_milli : int64_t{p.gpus} * p.milli.value();
    scaled[m] = static_cast<__int128>(p.weight) * kScale / asked;
    total += scaled[m];
  }
  // Only the ratios matter: scale down as a whole to stay within the bound.
  const __int128 divisor = total <= kMaxTotalWeight ? 1 : total / (kMaxTotalWeight / 2) + 1;
  const CpuPerGpu demand = DemandOf(pods);  // by arrivals, as the weights came
  std::vector<ModelDemand> model_demand = ModelDemandOf(pods);
  std::vector<WholeNodeKind> whole_node_kinds = WholeNodeKindsOf(pods);
  for (size_t m = 0; m < pods.size(); ++m) {
    pods[m].weight = std::max<int64_t>(1, static_cast<int64_t>(scaled[m] / divisor));
  }
  absl::StatusOr<TargetWorkload> weighed = Create(std::move(pods));
  if (weighed.ok()) {
    weighed->demand_cpu_per_gpu_ = demand;
    weighed->model_demand_ = std::move(model_demand);
    weighed->whole_node_kinds_ = std::move(whole_node_kinds);
  }
  return weighed;
}

}  // namespace tessera
