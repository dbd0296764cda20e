#include "policies/fragmentation.h"

#include <algorithm>
#include <array>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "policies/gpu_share.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// The paper's fragment kinds, which F sums in this order. (Its Q3, the free
// GPU a kind that fits can use, is not fragment and is not summed.)
enum FragKind { kQ1LackBoth, kQ2LackGpu, kQ4LackCpu, kXlSatisfied, kXrLackCpu, kNoAccess, kKinds };

constexpr int64_t kMaxCount = 1'000'000'000;

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
    } else if (key == "models") {
      for (absl::string_view m : absl::StrSplit(Absl(value), '|', absl::SkipEmpty())) pod.models.emplace_back(Std(m));
      if (pod.models.empty()) st = absl::InvalidArgumentError("models=: list at least one model, as in models=V100M16|V100M32");
    } else {
      st = absl::InvalidArgumentError(absl::StrCat("unknown field \"", Absl(words[i]), "\"; known: cpu=, gpu=, models="));
    }
    if (!st.ok()) return st;
  }
  if (!has_cpu) return absl::InvalidArgumentError("cpu= is required (cpu=0 for none)");
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
  if (!pod.models.empty()) absl::StrAppend(&s, " models=", absl::StrJoin(pod.models, "|"));
  return s;
}

absl::StatusOr<TargetWorkload> TargetWorkload::Create(std::vector<WorkloadPod> pods) {
  if (pods.empty()) return absl::InvalidArgumentError("a workload needs at least one kind of pod");
  int64_t total = 0;
  for (const WorkloadPod& p : pods) {
    if (p.weight <= 0) return absl::InvalidArgumentError(absl::StrCat("\"", FormatWorkloadPod(p), "\": weight must be positive"));
    if ((p.gpus == 0) != (p.milli.value() == 0) || p.milli > kOneGpu || p.gpus < 0) {
      return absl::InvalidArgumentError(absl::StrCat("\"", FormatWorkloadPod(p), "\": GPU count and share disagree"));
    }
    total += p.weight;
  }
  TargetWorkload w;
  w.probabilities_.reserve(pods.size());
  for (const WorkloadPod& p : pods) w.probabilities_.push_back(static_cast<double>(p.weight) / static_cast<double>(total));
  double cpu = 0, gpus = 0;
  for (size_t m = 0; m < pods.size(); ++m) {
    if (pods[m].gpus == 0) continue;
    cpu += w.probabilities_[m] * static_cast<double>(pods[m].cpu.value());
    gpus += w.probabilities_[m] * static_cast<double>(pods[m].gpus * pods[m].milli.value()) / 1000;
  }
  if (gpus > 0) w.cpu_per_gpu_ = cpu / gpus;
  for (const WorkloadPod& p : pods) {
    w.has_models_ = w.has_models_ || !p.models.empty();
    if (p.gpus > 0) w.shares_.push_back(p.milli.value());
  }
  std::sort(w.shares_.begin(), w.shares_.end());
  w.shares_.erase(std::unique(w.shares_.begin(), w.shares_.end()), w.shares_.end());
  for (size_t m = 0; m < pods.size(); ++m) {
    const WorkloadPod& p = pods[m];
    const auto share = std::lower_bound(w.shares_.begin(), w.shares_.end(), p.milli.value());
    w.kinds_.push_back(Kind{.p = w.probabilities_[m],
                            .cpu = p.cpu.value(),
                            .gpus = p.gpus,
                            .milli = p.milli.value(),
                            .share = p.gpus == 0 ? 0 : static_cast<size_t>(share - w.shares_.begin())});
  }
  w.pods_ = std::move(pods);
  return w;
}

NodeGpuAccess::NodeGpuAccess(const TargetWorkload& workload, absl::Span<const GpuDevice> gpus)
    : gpus_(gpus.size()) {
  open_ = gpus_ > 0 || std::all_of(workload.pods().begin(), workload.pods().end(),
                                   [](const WorkloadPod& p) { return p.gpus == 0; });
  if (!workload.has_models()) return;  // every kind takes any GPU: nothing to work out per node
  const std::vector<WorkloadPod>& pods = workload.pods();
  any_.assign(pods.size(), gpus_ > 0 ? 1 : 0);
  const bool one_model = std::all_of(gpus.begin(), gpus.end(), [&](const GpuDevice& g) { return g.model == gpus[0].model; });
  for (size_t m = 0; m < pods.size(); ++m) {
    if (pods[m].models.empty() || gpus_ == 0) continue;
    const auto accepts = [&](const GpuDevice& g) {
      return std::any_of(pods[m].models.begin(), pods[m].models.end(),
                         [&](const std::string& model) { return GpuModelMatches(model, g.model); });
    };
    if (one_model) {
      any_[m] = accepts(gpus[0]) ? 1 : 0;
      continue;
    }
    if (uniform_) {  // the first kind that tells GPUs apart: from here on, per GPU
      uniform_ = false;
      usable_.assign(pods.size() * gpus_, 1);
      for (size_t earlier = 0; earlier < m; ++earlier) {
        for (size_t i = 0; i < gpus_; ++i) usable_[earlier * gpus_ + i] = any_[earlier];
      }
    }
    bool any = false;
    for (size_t i = 0; i < gpus_; ++i) {
      const bool ok = accepts(gpus[i]);
      usable_[m * gpus_ + i] = ok ? 1 : 0;
      any = any || ok;
    }
    any_[m] = any ? 1 : 0;
  }
  for (size_t m = 0; m < pods.size(); ++m) open_ = open_ && (pods[m].gpus == 0 || any_[m] != 0);
}

namespace {

// The fragment of a kind that fits and has the CPU: the free milli-GPU on
// the GPUs too small for it, plus, with host stranding, what its usable GPU
// exceeds the free CPU's service (see the top of fragmentation.h).
int64_t FragmentWhenFits(int64_t free_total, int64_t too_small, std::optional<double> serviceable) {
  int64_t fragment = too_small;
  const double usable = static_cast<double>(free_total - too_small);
  if (serviceable.has_value() && usable > *serviceable) fragment += static_cast<int64_t>(usable - *serviceable);
  return fragment;
}

// The kinds' sums, added into F in the paper's order.
struct KindSums {
  double sum[kKinds] = {};
  [[nodiscard]] double Total() const {
    double fragmented = 0;
    for (double s : sum) fragmented += s;
    return fragmented;
  }
};

// A node whose GPUs every kind may use alike (NodeGpuAccess::uniform): only
// how much is free matters, not where. A share fits on the GPUs with at
// least that much free, so per distinct share of the workload one count and
// one fragment serve every kind of that share.
double UniformFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                            absl::Span<const int64_t> free_milli, int64_t free_total, std::optional<int64_t> cpu_free,
                            std::optional<double> serviceable) {
  const double all_free = static_cast<double>(free_total);
  // Per distinct share: how many GPUs have room for it, and what a kind of
  // that share leaves fragmented when it has its GPUs ([1]) or not ([0]).
  // Counted GPU by GPU without branches: which GPUs have room differs from
  // node to node, and mispredicted branches cost more than the counting.
  const std::vector<int64_t>& shares = workload.shares();
  absl::InlinedVector<int64_t, 32> fitting_storage(shares.size());
  absl::InlinedVector<std::array<double, 2>, 32> fragment_storage(shares.size());
  int64_t* const fitting = fitting_storage.data();
  std::array<double, 2>* const fragment = fragment_storage.data();
  const int64_t* const free = free_milli.data();
  const size_t gpus = free_milli.size();
  for (size_t k = 0; k < shares.size(); ++k) {
    const int64_t share = shares[k];
    int64_t fit = 0, too_small = 0;
    for (size_t i = 0; i < gpus; ++i) {
      const int64_t room = free[i] >= share ? 1 : 0;
      fit += room;
      too_small += free[i] & (room - 1);  // all ones when there is no room
    }
    fitting[k] = fit;
    fragment[k] = {all_free, static_cast<double>(FragmentWhenFits(free_total, too_small, serviceable))};
  }

  // Unknown CPU is never short: as if the node had all the CPU there is.
  const int64_t cpu = cpu_free.value_or(std::numeric_limits<int64_t>::max());
  // Locals, not an array indexed by kind, so that the sums stay in
  // registers. Every kind adds to each sum, +0.0 to all but its own (exact:
  // the sums are never negative), so that no branch depends on the node.
  double q1_lack_both = 0, q2_lack_gpu = 0, q4_lack_cpu = 0, xl_satisfied = 0, xr_lack_cpu = 0, no_access = 0;
  const std::vector<TargetWorkload::Kind>& kinds = workload.kinds();
  for (size_t m = 0; m < kinds.size(); ++m) {
    const TargetWorkload::Kind& kind = kinds[m];
    // 1.0 or 0.0: x · 1.0 is x and x · 0.0 is 0.0 exactly, and compilers
    // keep a multiplication where they turn a choice into a branch.
    const double cpu_fits = cpu >= kind.cpu ? 1.0 : 0.0;
    const double all = kind.p * all_free;
    if (kind.gpus == 0) {  // the same kinds on every node: predicted
      xl_satisfied += all * cpu_fits;
      xr_lack_cpu += all * (1.0 - cpu_fits);
    } else if (!access.any_usable(m)) {  // the same on every node of a model
      no_access += all;
    } else {
      const size_t has_gpus = fitting[kind.share] >= kind.gpus ? 1 : 0;
      const double has = static_cast<double>(has_gpus);
      q2_lack_gpu += kind.p * fragment[kind.share][has_gpus] * cpu_fits;
      q4_lack_cpu += all * ((1.0 - cpu_fits) * has);
      q1_lack_both += all * ((1.0 - cpu_fits) * (1.0 - has));
    }
  }
  KindSums sums;
  sums.sum[kQ1LackBoth] = q1_lack_both;
  sums.sum[kQ2LackGpu] = q2_lack_gpu;
  sums.sum[kQ4LackCpu] = q4_lack_cpu;
  sums.sum[kXlSatisfied] = xl_satisfied;
  sums.sum[kXrLackCpu] = xr_lack_cpu;
  sums.sum[kNoAccess] = no_access;
  return sums.Total();
}

// A node of several GPU models where some kind accepts only some of them:
// which GPU has the room matters, so each kind counts its GPUs.
double MixedFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                          absl::Span<const int64_t> free_milli, int64_t free_total, std::optional<int64_t> cpu_free,
                          std::optional<double> serviceable) {
  const double all_free = static_cast<double>(free_total);
  KindSums sums;
  const std::vector<TargetWorkload::Kind>& kinds = workload.kinds();
  for (size_t m = 0; m < kinds.size(); ++m) {
    const TargetWorkload::Kind& kind = kinds[m];
    const bool cpu_fits = !cpu_free.has_value() || *cpu_free >= kind.cpu;
    if (kind.gpus == 0) {
      sums.sum[cpu_fits ? kXlSatisfied : kXrLackCpu] += kind.p * all_free;
      continue;
    }
    if (!access.any_usable(m)) {
      sums.sum[kNoAccess] += kind.p * all_free;
      continue;
    }
    int64_t fitting = 0, too_small = 0;
    for (size_t i = 0; i < free_milli.size(); ++i) {
      if (access.usable(m, i) && free_milli[i] >= kind.milli) {
        ++fitting;
      } else {
        too_small += free_milli[i];
      }
    }
    if (fitting < kind.gpus) {
      sums.sum[cpu_fits ? kQ2LackGpu : kQ1LackBoth] += kind.p * all_free;
    } else if (!cpu_fits) {
      sums.sum[kQ4LackCpu] += kind.p * all_free;
    } else {
      sums.sum[kQ2LackGpu] += kind.p * static_cast<double>(FragmentWhenFits(free_total, too_small, serviceable));
    }
  }
  return sums.Total();
}

}  // namespace

double NodeFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                         absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                         const FragmentationOptions& options) {
  int64_t free_total = 0;
  for (int64_t f : free_milli) free_total += f;
  if (free_total == 0) return 0;  // nothing free, nothing fragmented
  // Host stranding: the milli-GPU the free CPU serves at the workload's ratio.
  std::optional<double> serviceable;
  if (options.host_stranding && cpu_free.has_value() && access.open() && workload.cpu_per_gpu() > 0) {
    serviceable = static_cast<double>(*cpu_free) / workload.cpu_per_gpu() * 1000;
  }
  return access.uniform() ? UniformFragmentation(workload, access, free_milli, free_total, cpu_free, serviceable)
                          : MixedFragmentation(workload, access, free_milli, free_total, cpu_free, serviceable);
}

}  // namespace tessera
