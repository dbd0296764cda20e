#include "policies/gpu_share.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// How one GPU relates to the pod.
enum class GpuFit {
  kModelRefused,   // never: not an accepted model
  kUnhealthy,      // never (until the node's agent says otherwise): the GPU is broken
  kMemoryUnknown,  // never: pod reserves memory, the card's size is unknown
  kTooSmall,       // never: not enough memory even when idle
  kFull,           // not now: others hold too much
  kFits,
};

constexpr size_t kMaxListedGpus = 4;

MemoryMiB UsableMemory(const GpuShareArgs& args, MemoryMiB total) {
  return std::max(MemoryMiB(0), total - args.memory_reserve);
}

MemoryMiB MemoryLimitOf(const PodGpuRequest& r) {
  return r.memory_limit > r.memory ? r.memory_limit : r.memory;
}

bool ModelAccepted(const PodGpuRequest& r, const GpuDevice& gpu) {
  if (r.models.empty() && r.excluded_models.empty()) return true;  // the inventory's line stays unread
  if (!r.models.empty()) {
    const bool any = std::any_of(r.models.begin(), r.models.end(),
                                 [&](const std::string& m) { return GpuModelMatches(m, gpu.model); });
    if (!any) return false;
  }
  return std::none_of(r.excluded_models.begin(), r.excluded_models.end(),
                      [&](const std::string& m) { return GpuModelMatches(m, gpu.model); });
}

// Whether the pod could use this GPU were it idle. `device` (the same GPU in
// the inventory) is read for its model, and only when the pod names models.
GpuFit FitWhenIdle(const GpuShareArgs& args, const PodGpuRequest& r, const GpuDevice& device, const GpuState& gpu) {
  if (!ModelAccepted(r, device)) return GpuFit::kModelRefused;
  if (!gpu.healthy) return GpuFit::kUnhealthy;
  if (r.memory.value() > 0) {
    if (!gpu.memory_known()) return GpuFit::kMemoryUnknown;
    const MemoryMiB usable = UsableMemory(args, gpu.memory);
    if (r.memory > usable) return GpuFit::kTooSmall;
    if (!r.whole_gpu && MemoryLimitOf(r).value() * 100 > usable.value() * args.max_memory_limit_percent) {
      return GpuFit::kTooSmall;
    }
  }
  return GpuFit::kFits;
}

// Whether the pod fits on this GPU next to what pods hold on it now.
GpuFit FitNow(const GpuShareArgs& args, const PodGpuRequest& r, const GpuDevice& device, const GpuState& gpu) {
  if (const GpuFit idle = FitWhenIdle(args, r, device, gpu); idle != GpuFit::kFits) return idle;
  const GpuUsage& u = gpu.usage;
  if (r.whole_gpu) return u.idle() ? GpuFit::kFits : GpuFit::kFull;
  if (u.guaranteed + r.guaranteed > kOneGpu) return GpuFit::kFull;
  if (u.limit.value() + r.limit.value() > 10 * args.max_limit_percent) return GpuFit::kFull;
  if (gpu.memory_known()) {
    const MemoryMiB usable = UsableMemory(args, gpu.memory);
    if (u.memory + r.memory > usable) return GpuFit::kFull;
    if ((u.memory_limit + MemoryLimitOf(r)).value() * 100 > usable.value() * args.max_memory_limit_percent) {
      return GpuFit::kFull;
    }
  }
  return GpuFit::kFits;
}

// Appends the first reason the pod does not fit on a GPU now; only on rejection.
void AppendWhyFull(std::string& out, const GpuShareArgs& args, const PodGpuRequest& r, const GpuState& gpu) {
  const GpuUsage& u = gpu.usage;
  if (r.whole_gpu) {
    return absl::StrAppend(&out, "GPU ", gpu.index, " is shared by ", u.pods, u.pods == 1 ? " pod" : " pods",
                        " and the pod needs a whole GPU");
  }
  const int64_t free_milli = std::max<int64_t>(0, (kOneGpu - u.guaranteed).value());
  if (u.guaranteed + r.guaranteed > kOneGpu) {
    return absl::StrAppend(&out, "GPU ", gpu.index, " has ", free_milli, "/1000 milli free, pod needs ", r.guaranteed.value());
  }
  const int64_t cap = 10 * args.max_limit_percent;
  if (u.limit.value() + r.limit.value() > cap) {
    return absl::StrAppend(&out, "GPU ", gpu.index, " burst limits would reach ", u.limit.value() + r.limit.value(), "/", cap,
                        " milli (cap ", args.max_limit_percent, " percent)");
  }
  const MemoryMiB usable = UsableMemory(args, gpu.memory);
  if (u.memory + r.memory > usable) {
    return absl::StrAppend(&out, "GPU ", gpu.index, " has ", std::max<int64_t>(0, (usable - u.memory).value()), " of ",
                        usable.value(), " MiB free, pod needs ", r.memory.value(), " MiB");
  }
  return absl::StrAppend(&out, "GPU ", gpu.index, " memory limits would reach ", (u.memory_limit + MemoryLimitOf(r)).value(),
                      " MiB, over ", args.max_memory_limit_percent, " percent of its ", usable.value(), " usable MiB");
}

std::string DescribeModels(const PodGpuRequest& r) {
  std::string s;
  if (!r.models.empty()) absl::StrAppend(&s, "accepted: ", absl::StrJoin(r.models, ","));
  if (!r.excluded_models.empty()) {
    absl::StrAppend(&s, s.empty() ? "" : "; ", "excluded: ", absl::StrJoin(r.excluded_models, ","));
  }
  return s;
}

std::string DescribeInventory(absl::Span<const GpuDevice> gpus) {
  // "2x NVIDIA-T4, 1x (unknown model)" in device order of first appearance.
  std::vector<std::pair<std::string_view, int>> counts;
  for (const GpuDevice& g : gpus) {
    std::string_view model = g.model.empty() ? std::string_view("(unknown model)") : std::string_view(g.model);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == model; });
    if (it == counts.end()) counts.emplace_back(model, 1); else ++it->second;
  }
  return absl::StrJoin(counts, ", ", [](std::string* out, const auto& c) {
    absl::StrAppend(out, c.second, "x ", Absl(c.first));
  });
}

const GpuDevice* FindGpu(absl::Span<const GpuDevice> gpus, int32_t index) {
  // Inventories are sorted by index and almost always dense (0..n-1).
  if (index >= 0 && static_cast<size_t>(index) < gpus.size() && gpus[index].index == index) return &gpus[index];
  auto it = std::lower_bound(gpus.begin(), gpus.end(), index,
                             [](const GpuDevice& g, int32_t i) { return g.index < i; });
  return it != gpus.end() && it->index == index ? &*it : nullptr;
}

MilliGpu GuaranteedOf(const PodGpuRequest& r) { return r.whole_gpu ? kOneGpu : r.guaranteed; }

// "node has 8 GPUs, 1 unhealthy (GPU 3), pod needs 8 healthy ...": the
// rejection when broken GPUs are what the pod lacks.
std::string WhyUnhealthy(const PodGpuRequest& r, absl::Span<const GpuDevice> gpus, absl::Span<const GpuFit> fits,
                         int accepted, int unhealthy) {
  std::vector<int32_t> broken;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (fits[i] == GpuFit::kUnhealthy && broken.size() < kMaxListedGpus) broken.push_back(gpus[i].index);
  }
  const bool by_model = !r.models.empty() || !r.excluded_models.empty();
  return absl::StrCat("node has ", accepted, by_model ? " GPUs of an accepted model, " : " GPUs, ", unhealthy,
                      " unhealthy (GPU ", absl::StrJoin(broken, ", "), unhealthy > static_cast<int>(broken.size()) ? ", ..." : "",
                      "; its tessera.io/gpu-inventory says why), pod needs ", r.count, " healthy");
}

// A GPU the pod fits on now, with what the GPU choice orders GPUs by.
struct Candidate {
  int32_t index;
  bool burst_room;
  int64_t free_milli_after;
  int64_t free_mib_after;
};

absl::InlinedVector<Candidate, 16> FittingGpus(const GpuShareArgs& args, const PodGpuRequest& r,
                                               const NodeView& node) {
  absl::InlinedVector<Candidate, 16> candidates;
  const bool bursts = !r.whole_gpu && r.limit > r.guaranteed;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuState& g = node.gpu_states[i];
    if (FitNow(args, r, node.gpus[i], g) != GpuFit::kFits) continue;
    const GpuUsage& u = g.usage;
    const MilliGpu after = u.guaranteed + GuaranteedOf(r);
    candidates.push_back(Candidate{
        .index = g.index,
        .burst_room = bursts && (u.limit + r.limit) <= kOneGpu,
        .free_milli_after = (kOneGpu - after).value(),
        .free_mib_after = (UsableMemory(args, g.memory) - u.memory - r.memory).value(),
    });
  }
  return candidates;
}

// The GPU choice's order (step 3 of the file comment): "less" is better.
struct Preference {
  explicit Preference(const GpuShareArgs& args) : pack(args.gpu_strategy == PlacementStrategy::kBinpack) {}

  // Equal up to the last resort, the index: one tier of RankGpus.
  [[nodiscard]] bool SameTier(const Candidate& a, const Candidate& b) const {
    return a.burst_room == b.burst_room && a.free_milli_after == b.free_milli_after &&
           a.free_mib_after == b.free_mib_after;
  }
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.burst_room != b.burst_room) return a.burst_room;
    if (a.free_milli_after != b.free_milli_after) {
      return pack ? a.free_milli_after < b.free_milli_after : a.free_milli_after > b.free_milli_after;
    }
    if (a.free_mib_after != b.free_mib_after) {
      return pack ? a.free_mib_after < b.free_mib_after : a.free_mib_after > b.free_mib_after;
    }
    return a.index < b.index;
  }

  bool pack;
};

}  // namespace

bool GpuModelMatches(std::string_view pattern, std::string_view model) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return model.size() >= pattern.size() && absl::EqualsIgnoreCase(Absl(model.substr(0, pattern.size())), Absl(pattern));
  }
  return absl::EqualsIgnoreCase(Absl(model), Absl(pattern));
}

absl::StatusOr<std::unique_ptr<Plugin>> GpuSharePlugin::New(PluginArgs& args) {
  GpuShareArgs a;
  auto strategy = [](const std::string& s) {
    return s == "spread" ? PlacementStrategy::kSpread : PlacementStrategy::kBinpack;
  };
  a.node_strategy = strategy(args.Enum("nodeStrategy", {"binpack", "spread"}, "binpack"));
  a.gpu_strategy = strategy(args.Enum("gpuStrategy", {"binpack", "spread"}, "binpack"));
  a.memory_reserve = args.Memory("gpuMemoryReserve", MemoryMiB(0));
  a.max_limit_percent = args.Int("maxLimitPercent", 100, 1000, a.max_limit_percent);
  a.max_memory_limit_percent = args.Int("maxMemoryLimitPercent", 100, 1000, a.max_memory_limit_percent);
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuSharePlugin>(a);
}

FilterVerdict GpuSharePlugin::Filter(const PodGpuRequest& r, const NodeView& node) const {
  if (r.count <= 0) return FilterVerdict::Success();  // asks for no GPU: its inventory does not matter
  if (!node.inventory_ok()) {
    return FilterVerdict::Never("inventory_unreadable",
                                absl::StrCat("node GPU inventory is unreadable: ", node.inventory_error->message()));
  }
  const absl::Span<const GpuDevice> gpus = node.gpus;
  if (gpus.empty()) return FilterVerdict::Never("no_gpus", "node has no GPUs");

  int accepted = 0, unhealthy = 0, large_enough = 0, fits_now = 0, memory_unknown = 0;
  // Remember each GPU's fit: the rejection message below needs the full ones
  // without evaluating them again.
  absl::InlinedVector<GpuFit, 16> fits;
  fits.reserve(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuFit fit = FitNow(args_, r, gpus[i], node.gpu_states[i]);
    fits.push_back(fit);
    switch (fit) {
      case GpuFit::kModelRefused: break;
      case GpuFit::kUnhealthy: ++accepted; ++unhealthy; break;
      case GpuFit::kMemoryUnknown: ++accepted; ++memory_unknown; break;
      case GpuFit::kTooSmall: ++accepted; break;
      case GpuFit::kFull: ++accepted; ++large_enough; break;
      case GpuFit::kFits: ++accepted; ++large_enough; ++fits_now; break;
    }
  }
  if (fits_now >= r.count) return FilterVerdict::Success();

  if (accepted < r.count) {
    if (r.models.empty() && r.excluded_models.empty()) {
      return FilterVerdict::Never("too_few_gpus", absl::StrCat("node has ", gpus.size(), " GPUs, pod needs ", r.count));
    }
    return FilterVerdict::Never(
        "gpu_model_mismatch",
        absl::StrCat("node has ", accepted, " GPUs of an accepted model (", DescribeModels(r), "), pod needs ",
                     r.count, "; node has ", DescribeInventory(gpus)));
  }
  if (accepted - unhealthy < r.count) {
    return FilterVerdict::Never("gpu_unhealthy", WhyUnhealthy(r, gpus, fits, accepted, unhealthy));
  }
  if (large_enough < r.count) {
    if (memory_unknown > 0) {
      return FilterVerdict::Never(
          "gpu_memory_unknown",
          absl::StrCat("pod reserves ", r.memory.value(), " MiB per GPU (tessera.io/gpu-memory) but the memory of ",
                       memory_unknown, memory_unknown == 1 ? " GPU" : " GPUs", " on this node is unknown; publish tessera.io/gpu-inventory or ",
                       "nvidia.com/gpu.memory"));
    }
    MemoryMiB largest(0);
    for (const GpuDevice& g : gpus) {
      if (ModelAccepted(r, g)) largest = std::max(largest, UsableMemory(args_, g.memory));
    }
    if (r.memory <= largest) {
      // The reservation fits: the memory limit is what no GPU can take.
      return FilterVerdict::Never(
          "gpu_memory_too_small",
          absl::StrCat("pod's memory limit of ", MemoryLimitOf(r).value(), " MiB per GPU (tessera.io/gpu-memory-limit)",
                       " fits on ", large_enough, " accepted GPUs, pod needs ", r.count, " (a limit may reach ",
                       args_.max_memory_limit_percent, " percent of a GPU's usable memory, maxMemoryLimitPercent; largest: ",
                       largest.value(), " MiB usable)"));
    }
    return FilterVerdict::Never(
        "gpu_memory_too_small",
        absl::StrCat("pod needs ", r.memory.value(), " MiB per GPU (tessera.io/gpu-memory) on ", r.count,
                     r.count == 1 ? " GPU" : " GPUs", "; only ", large_enough, " accepted GPUs are that large (largest: ",
                     largest.value(), " MiB usable after the ", args_.memory_reserve.value(), " MiB reserve)"));
  }

  std::string msg;
  msg.reserve(64 + 72 * kMaxListedGpus);
  if (r.count == 1) {
    msg = "no GPU can take the pod now: ";
  } else {
    absl::StrAppend(&msg, fits_now, " of the ", r.count, " GPUs the pod needs can take it now: ");
  }
  size_t full = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (fits[i] != GpuFit::kFull) continue;
    if (++full > kMaxListedGpus) continue;
    if (full > 1) msg += "; ";
    AppendWhyFull(msg, args_, r, node.gpu_states[i]);
  }
  if (full > kMaxListedGpus) {
    const size_t more = full - kMaxListedGpus;
    absl::StrAppend(&msg, " (and ", more, more == 1 ? " more GPU)" : " more GPUs)");
  }
  return FilterVerdict::NotNow("insufficient_gpu", std::move(msg));
}

std::optional<GpuChoice> GpuSharePlugin::ChooseGpus(const PodGpuRequest& r, const NodeView& node) const {
  if (r.count <= 0) return std::optional<GpuChoice>(std::in_place);  // asks for no GPU: none to choose
  if (!node.inventory_ok()) return std::nullopt;
  absl::InlinedVector<Candidate, 16> candidates = FittingGpus(args_, r, node);
  if (candidates.size() < static_cast<size_t>(r.count)) return std::nullopt;
  std::partial_sort(candidates.begin(), candidates.begin() + r.count, candidates.end(), Preference{args_});
  GpuChoice choice;
  for (int32_t i = 0; i < r.count; ++i) choice.gpu_indices.push_back(candidates[i].index);
  return choice;
}

bool GpuSharePlugin::FitsOneGpu(const PodGpuRequest& r, const NodeView& node, size_t position) const {
  return node.inventory_ok() && FitNow(args_, r, node.gpus[position], node.gpu_states[position]) == GpuFit::kFits;
}

std::optional<RankedGpus> GpuSharePlugin::RankGpus(const PodGpuRequest& r, const NodeView& node) const {
  std::optional<RankedGpus> ranked(std::in_place);  // one object, returned in place
  if (!node.inventory_ok()) return ranked;
  absl::InlinedVector<Candidate, 16> candidates = FittingGpus(args_, r, node);
  const Preference better{args_};
  std::sort(candidates.begin(), candidates.end(), better);
  int32_t tier = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0 && !better.SameTier(candidates[i - 1], candidates[i])) ++tier;
    ranked->push_back(RankedGpu{.index = candidates[i].index, .tier = tier});
  }
  return ranked;
}

int64_t GpuSharePlugin::Score(const PodGpuRequest& r, const NodeView& node, const GpuChoice& choice) const {
  const absl::Span<const GpuDevice> gpus = node.gpus;
  if (gpus.empty() || r.count <= 0) return 0;  // no GPU asked: no preference (file comment)
  int64_t used = 0;
  for (const GpuState& g : node.gpu_states) used += std::min(kOneGpu, g.usage.guaranteed).value();
  used += GuaranteedOf(r).value() * static_cast<int64_t>(choice.gpu_indices.size());
  const int64_t capacity = kOneGpu.value() * static_cast<int64_t>(gpus.size());
  const int64_t utilisation_permille = std::min<int64_t>(1000, used * 1000 / capacity);
  return args_.node_strategy == PlacementStrategy::kBinpack ? utilisation_permille : 1000 - utilisation_permille;
}

void GpuSharePlugin::NormalizeScores(absl::Span<int64_t> scores) const {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min = *lo, max = *hi;
  for (int64_t& s : scores) {
    // Stretch so the best candidate gets the full score; with no spread
    // between candidates keep the absolute level (per-mille -> percent).
    s = max > min ? (s - min) * kMaxPluginScore / (max - min) : s * kMaxPluginScore / 1000;
  }
}

std::vector<GpuShare> GpuSharePlugin::SharesFor(const PodGpuRequest& r, const NodeView& node,
                                                const GpuChoice& choice) const {
  std::vector<GpuShare> shares;
  shares.reserve(choice.gpu_indices.size());
  for (int32_t index : choice.gpu_indices) {
    const GpuDevice* g = FindGpu(node.gpus, index);
    GpuShare s;
    s.index = index;
    if (g != nullptr) s.uuid = g->uuid;
    if (r.whole_gpu) {
      s.guaranteed = s.limit = kOneGpu;
      s.memory = r.memory.value() > 0 || g == nullptr ? r.memory : UsableMemory(args_, g->memory);
      s.memory_limit = std::max(s.memory, MemoryLimitOf(r));
    } else {
      s.guaranteed = r.guaranteed;
      s.limit = r.limit;
      s.memory = r.memory;
      s.memory_limit = MemoryLimitOf(r);
    }
    shares.push_back(std::move(s));
  }
  return shares;
}

}  // namespace tessera
