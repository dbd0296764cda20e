#include "policies/fragmentation.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "policies/gpu_share.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// The paper's fragment kinds; F sums every kind but Q3 in this order.
enum FragKind { kQ1LackBoth, kQ2LackGpu, kQ3Satisfied, kQ4LackCpu, kXlSatisfied, kXrLackCpu, kNoAccess, kKinds };

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
  for (const WorkloadPod& p : pods) {
    w.share_of_.push_back(p.gpus == 0 ? 0
                                      : static_cast<size_t>(std::lower_bound(w.shares_.begin(), w.shares_.end(),
                                                                             p.milli.value()) - w.shares_.begin()));
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

double NodeFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                         absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                         const FragmentationOptions& options) {
  int64_t free_total = 0;
  for (int64_t f : free_milli) free_total += f;
  if (free_total == 0) return 0;  // nothing free, nothing fragmented
  const double all_free = static_cast<double>(free_total);

  // Free amounts in ascending order with prefix sums: on a uniform node a
  // kind fits on a suffix of them.
  absl::InlinedVector<int64_t, 8> sorted(free_milli.begin(), free_milli.end());
  std::sort(sorted.begin(), sorted.end());
  absl::InlinedVector<int64_t, 9> prefix(sorted.size() + 1, 0);
  for (size_t i = 0; i < sorted.size(); ++i) prefix[i + 1] = prefix[i] + sorted[i];
  // For each of the workload's distinct shares, where in `sorted` the GPUs large enough start.
  const std::vector<int64_t>& shares = workload.shares();
  absl::InlinedVector<size_t, 32> first_fit(shares.size(), 0);
  for (size_t k = 0, i = 0; k < shares.size(); ++k) {
    while (i < sorted.size() && sorted[i] < shares[k]) ++i;
    first_fit[k] = i;
  }

  // Host stranding: the milli-GPU the free CPU serves at the workload's ratio.
  std::optional<double> serviceable;
  if (options.host_stranding && cpu_free.has_value() && access.open() && workload.cpu_per_gpu() > 0) {
    serviceable = static_cast<double>(*cpu_free) / workload.cpu_per_gpu() * 1000;
  }

  double kinds[kKinds] = {};
  const std::vector<WorkloadPod>& pods = workload.pods();
  const std::vector<double>& p = workload.probabilities();
  for (size_t m = 0; m < pods.size(); ++m) {
    const WorkloadPod& pod = pods[m];
    const bool cpu_fits = !cpu_free.has_value() || *cpu_free >= pod.cpu.value();
    if (pod.gpus == 0) {
      kinds[cpu_fits ? kXlSatisfied : kXrLackCpu] += p[m] * all_free;
      continue;
    }
    if (!access.any_usable(m)) {
      kinds[kNoAccess] += p[m] * all_free;
      continue;
    }
    // The GPUs this kind fits on, and the free milli on the others.
    int64_t fitting = 0, too_small = 0;
    if (access.uniform()) {
      const size_t first = first_fit[workload.share_of(m)];
      fitting = static_cast<int64_t>(sorted.size() - first);
      too_small = prefix[first];
    } else {
      for (size_t i = 0; i < free_milli.size(); ++i) {
        if (access.usable(m, i) && free_milli[i] >= pod.milli.value()) {
          ++fitting;
        } else {
          too_small += free_milli[i];
        }
      }
    }
    if (fitting >= pod.gpus) {
      if (cpu_fits) {
        int64_t fragment = too_small;  // the GPUs too small for it
        if (serviceable.has_value() && static_cast<double>(free_total - too_small) > *serviceable) {
          fragment += static_cast<int64_t>(static_cast<double>(free_total - too_small) - *serviceable);
        }
        kinds[kQ2LackGpu] += p[m] * static_cast<double>(fragment);
        kinds[kQ3Satisfied] += p[m] * static_cast<double>(free_total - fragment);
      } else {
        kinds[kQ4LackCpu] += p[m] * all_free;
      }
    } else {
      kinds[cpu_fits ? kQ2LackGpu : kQ1LackBoth] += p[m] * all_free;
    }
  }
  double fragmented = 0;
  for (int k = 0; k < kKinds; ++k) {
    if (k != kQ3Satisfied) fragmented += kinds[k];
  }
  return fragmented;
}

}  // namespace tessera
