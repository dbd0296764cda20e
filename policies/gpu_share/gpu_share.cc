#include "policies/gpu_share/gpu_share.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// How one GPU relates to the pod.
enum class GpuFit {
  kModelRefused,   // never: not an accepted model
  kMigMode,        // never (until it leaves MIG mode): split into MIG instances
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


// Whether the pod could use this GPU were it idle. `device` (the same GPU in
// the inventory) is read for its model, and only when the pod names models.
GpuFit FitWhenIdle(const GpuShareArgs& args, const CycleState& cycle, const GpuDevice& device, const GpuState& gpu) {
  if (cycle.names_models() && !GpuAccepted(cycle, device)) return GpuFit::kModelRefused;
  if (gpu.mig_mode()) return GpuFit::kMigMode;
  if (!gpu.healthy()) return GpuFit::kUnhealthy;
  const PodGpuRequest& r = cycle.request();
  if (r.memory.value() > 0) {
    if (!gpu.memory_known()) return GpuFit::kMemoryUnknown;
    const MemoryMiB usable = UsableMemory(args, gpu.memory());
    if (r.memory > usable) return GpuFit::kTooSmall;
    if (!r.whole_gpu && cycle.memory_limit_per_gpu().value() * 100 > usable.value() * args.max_memory_limit_percent) {
      return GpuFit::kTooSmall;
    }
  }
  return GpuFit::kFits;
}

// Whether the pod fits on this GPU next to what pods hold on it now.
GpuFit FitNow(const GpuShareArgs& args, const CycleState& cycle, const GpuDevice& device, const GpuState& gpu) {
  if (const GpuFit idle = FitWhenIdle(args, cycle, device, gpu); idle != GpuFit::kFits) return idle;
  const PodGpuRequest& r = cycle.request();
  const GpuUsage u = gpu.usage();
  if (r.whole_gpu) return u.idle() ? GpuFit::kFits : GpuFit::kFull;
  if (u.guaranteed + r.guaranteed > kOneGpu) return GpuFit::kFull;
  if (u.limit.value() + r.limit.value() > 10 * args.max_limit_percent) return GpuFit::kFull;
  if (gpu.memory_known()) {
    const MemoryMiB usable = UsableMemory(args, gpu.memory());
    if (u.memory + r.memory > usable) return GpuFit::kFull;
    if ((u.memory_limit + cycle.memory_limit_per_gpu()).value() * 100 > usable.value() * args.max_memory_limit_percent) {
      return GpuFit::kFull;
    }
  }
  return GpuFit::kFits;
}

// FitNow(...) == GpuFit::kFits, without saying why not: the test every GPU
// of every candidate node is put to. It weighs every condition rather than
// branching on each, as most GPUs of a busy cluster fail one or another at
// random; FitNow, which says which, is asked only to explain a rejection.
bool FitsNow(const GpuShareArgs& args, const CycleState& cycle, const GpuDevice& device, const GpuState& gpu) {
  if (cycle.names_models() && !GpuAccepted(cycle, device)) return false;
  if (!gpu.takes_shares()) return false;
  const PodGpuRequest& r = cycle.request();
  const GpuUsage u = gpu.usage();
  const bool known = gpu.memory_known();
  const int64_t usable = UsableMemory(args, gpu.memory()).value();
  const int64_t memory_limit_cap = usable * args.max_memory_limit_percent;  // × 100, as the limits below
  const int64_t memory = r.memory.value(), memory_limit = cycle.memory_limit_per_gpu().value();
  // FitWhenIdle, then FitNow's tests of what pods hold.
  bool fits = memory == 0 || (known & (memory <= usable) & (r.whole_gpu | (memory_limit * 100 <= memory_limit_cap)));
  if (r.whole_gpu) return fits & u.idle();
  fits &= (u.guaranteed + r.guaranteed) <= kOneGpu;
  fits &= u.limit.value() + r.limit.value() <= 10 * args.max_limit_percent;
  // Named, so that `&` (every test weighed, no branch) reads plain values.
  const bool memory_fits = u.memory.value() + memory <= usable;
  const bool limit_fits = (u.memory_limit.value() + memory_limit) * 100 <= memory_limit_cap;
  fits &= (!known) | (memory_fits & limit_fits);
  return fits;
}

// How many of `gpus` pass FitsNow, for a pod that names no GPU model (so
// that the inventory is not read), counting no further than `enough`: the
// filter's test of every node, with what depends on the pod and the args
// alone worked out once. On most nodes of a busy cluster the first GPU or
// two take the pod, so stopping there spares reading the rest.
int32_t CountFitting(const GpuShareArgs& args, const CycleState& cycle, absl::Span<const GpuState> gpus,
                     int32_t enough) {
  const PodGpuRequest& r = cycle.request();
  const bool whole = r.whole_gpu;
  const int64_t memory = r.memory.value();
  const int64_t memory_limit_x100 = cycle.memory_limit_per_gpu().value() * 100;
  const int64_t reserve = args.memory_reserve.value();
  const int64_t memory_limit_percent = args.max_memory_limit_percent;
  const int64_t most_guaranteed_held = kOneGpu.value() - r.guaranteed.value();
  const int64_t most_limit_held = 10 * args.max_limit_percent - r.limit.value();
  int32_t fitting = 0;
  for (const GpuState& g : gpus) {
    const int64_t card = g.memory().value();
    const bool known = card > 0;
    const int64_t usable = std::max<int64_t>(0, card - reserve);
    const int64_t memory_limit_cap = usable * memory_limit_percent;
    bool fits = memory == 0 || (known & (memory <= usable) & (whole | (memory_limit_x100 <= memory_limit_cap)));
    if (whole) {
      fits &= g.idle();
    } else {
      const bool share_fits = g.guaranteed().value() <= most_guaranteed_held;
      const bool burst_fits = g.limit().value() <= most_limit_held;
      const bool memory_fits = g.memory_held().value() + memory <= usable;
      const bool limit_fits = g.memory_limit_held().value() * 100 + memory_limit_x100 <= memory_limit_cap;
      fits &= share_fits & burst_fits;
      fits &= (!known) | (memory_fits & limit_fits);
    }
    fits &= g.takes_shares();
    fitting += static_cast<int32_t>(fits);
    if (fitting >= enough) break;
  }
  return fitting;
}

// A rejection's text, written piece by piece into room made once per line
// of pieces: a rejection names a few GPUs in short pieces, on hundreds of
// nodes a request, and a std::string's bookkeeping per piece (absl::StrAppend's
// sizing pass, or append's out-of-line call) costs more than the text itself.
// Literals are copied with their length known when compiled.
class ReasonText {
 public:
  explicit ReasonText(size_t room) { text_.resize(room); }

  template <typename... Pieces>
  void Add(const Pieces&... pieces) {
    Room((MostBytes(pieces) + ...));
    (Put(pieces), ...);
  }

  [[nodiscard]] std::string Take() && {
    text_.resize(end_);
    return std::move(text_);
  }

 private:
  static constexpr size_t kMostDigits = 20;  // of an int64, sign included

  template <size_t N>
  static constexpr size_t MostBytes(const char (&)[N]) { return N - 1; }
  static size_t MostBytes(std::string_view text) { return text.size(); }
  static constexpr size_t MostBytes(int64_t) { return kMostDigits; }

  template <size_t N>
  void Put(const char (&literal)[N]) { Put(literal, N - 1); }
  void Put(std::string_view text) { Put(text.data(), text.size()); }
  void Put(int64_t number) {
    char* const at = text_.data() + end_;
    end_ += static_cast<size_t>(std::to_chars(at, at + kMostDigits, number).ptr - at);
  }
  void Put(const char* text, size_t n) {
    std::memcpy(text_.data() + end_, text, n);
    end_ += n;
  }

  void Room(size_t n) {
    if (end_ + n > text_.size()) text_.resize(std::max(2 * text_.size(), end_ + n));
  }

  std::string text_;  // [0, end_) written; the rest is room
  size_t end_ = 0;
};

// Appends the first reason the pod does not fit on a GPU now; only on rejection.
void AppendWhyFull(ReasonText& out, const GpuShareArgs& args, const CycleState& cycle, const GpuState& gpu) {
  const PodGpuRequest& r = cycle.request();
  const GpuUsage u = gpu.usage();
  const int64_t index = gpu.index();
  if (r.whole_gpu) {
    return out.Add("GPU ", index, " is shared by ", u.pods, u.pods == 1 ? " pod" : " pods",
                   " and the pod needs a whole GPU");
  }
  if (u.guaranteed + r.guaranteed > kOneGpu) {
    const int64_t free_milli = std::max<int64_t>(0, (kOneGpu - u.guaranteed).value());
    return out.Add("GPU ", index, " has ", free_milli, "/1000 milli free, pod needs ", r.guaranteed.value());
  }
  const int64_t cap = 10 * args.max_limit_percent;
  if (u.limit.value() + r.limit.value() > cap) {
    return out.Add("GPU ", index, " burst limits would reach ", u.limit.value() + r.limit.value(), "/", cap,
                   " milli (cap ", args.max_limit_percent, " percent)");
  }
  const MemoryMiB usable = UsableMemory(args, gpu.memory());
  if (u.memory + r.memory > usable) {
    return out.Add("GPU ", index, " has ", std::max<int64_t>(0, (usable - u.memory).value()), " of ",
                   usable.value(), " MiB free, pod needs ", r.memory.value(), " MiB");
  }
  return out.Add("GPU ", index, " memory limits would reach ", (u.memory_limit + cycle.memory_limit_per_gpu()).value(),
                 " MiB, over ", args.max_memory_limit_percent, " percent of its ", usable.value(), " usable MiB");
}

std::string DescribeModels(const PodGpuRequest& r) {
  std::string s;
  if (!r.vendors.empty()) {
    std::vector<std::string> names;
    for (GpuVendor v : r.vendors) names.emplace_back(GpuVendorName(v));
    absl::StrAppend(&s, "vendors: ", absl::StrJoin(names, ","));
  }
  if (!r.models.empty()) absl::StrAppend(&s, s.empty() ? "" : "; ", "accepted: ", absl::StrJoin(r.models, ","));
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

// Each GPU's fit, in inventory order.
using GpuFits = absl::InlinedVector<GpuFit, 16>;

// How many GPUs could take the pod: of an accepted model; large enough were
// they idle; fitting now; of those accepted, how many of unknown memory.
struct FitCounts {
  int accepted = 0, unhealthy = 0, large_enough = 0, fits_now = 0, memory_unknown = 0, mig_mode = 0;
};

FitCounts CountFits(const GpuFits& fits) {
  FitCounts c;
  for (const GpuFit fit : fits) {
    switch (fit) {
      case GpuFit::kModelRefused: break;
      case GpuFit::kMigMode: ++c.mig_mode; break;
      case GpuFit::kUnhealthy: ++c.accepted; ++c.unhealthy; break;
      case GpuFit::kMemoryUnknown: ++c.accepted; ++c.memory_unknown; break;
      case GpuFit::kTooSmall: ++c.accepted; break;
      case GpuFit::kFull: ++c.accepted; ++c.large_enough; break;
      case GpuFit::kFits: ++c.accepted; ++c.large_enough; ++c.fits_now; break;
    }
  }
  return c;
}

// The rejection when too few GPUs are of an accepted model, or large enough
// for the pod's memory were they idle: no amount of waiting helps.
FilterVerdict WhyNever(const GpuShareArgs& args, const CycleState& cycle, const NodeView& node, const FitCounts& c) {
  const PodGpuRequest& r = cycle.request();
  if (c.accepted < r.count) {
    if (c.mig_mode > 0) {
      return FilterVerdict::Never(
          "gpus_in_mig_mode",
          absl::StrCat("node has ", c.accepted, c.accepted == 1 ? " GPU" : " GPUs",
                       cycle.names_models() ? " of an accepted model" : "",
                       c.accepted == 1 ? " that takes shares" : " that take shares", ", pod needs ", r.count,
                       "; ", c.mig_mode, c.mig_mode == 1 ? " GPU is" : " GPUs are",
                       " in MIG mode and take only pods asking for a MIG profile"));
    }
    if (!cycle.names_models()) {
      return FilterVerdict::Never("too_few_gpus", absl::StrCat("node has ", node.gpus.size(), " GPUs, pod needs ", r.count));
    }
    return FilterVerdict::Never(
        "gpu_model_mismatch",
        absl::StrCat("node has ", c.accepted, " GPUs of an accepted model (", DescribeModels(r), "), pod needs ",
                     r.count, "; node has ", DescribeInventory(node.gpus)));
  }
  if (c.memory_unknown > 0) {
    return FilterVerdict::Never(
        "gpu_memory_unknown",
        absl::StrCat("pod reserves ", r.memory.value(), " MiB per GPU (tessera.io/gpu-memory) but the memory of ",
                     c.memory_unknown, c.memory_unknown == 1 ? " GPU" : " GPUs",
                     " on this node is unknown; publish tessera.io/gpu-inventory or ", "nvidia.com/gpu.memory"));
  }
  MemoryMiB largest(0);
  for (const GpuDevice& g : node.gpus) {
    if (GpuAccepted(cycle, g)) largest = std::max(largest, UsableMemory(args, g.memory));
  }
  if (r.memory <= largest) {
    // The reservation fits: the memory limit is what no GPU can take.
    return FilterVerdict::Never(
        "gpu_memory_too_small",
        absl::StrCat("pod's memory limit of ", cycle.memory_limit_per_gpu().value(),
                     " MiB per GPU (tessera.io/gpu-memory-limit)", " fits on ", c.large_enough,
                     " accepted GPUs, pod needs ", r.count, " (a limit may reach ", args.max_memory_limit_percent,
                     " percent of a GPU's usable memory, maxMemoryLimitPercent; largest: ", largest.value(),
                     " MiB usable)"));
  }
  return FilterVerdict::Never(
      "gpu_memory_too_small",
      absl::StrCat("pod needs ", r.memory.value(), " MiB per GPU (tessera.io/gpu-memory) on ", r.count,
                   r.count == 1 ? " GPU" : " GPUs", "; only ", c.large_enough, " accepted GPUs are that large (largest: ",
                   largest.value(), " MiB usable after the ", args.memory_reserve.value(), " MiB reserve)"));
}

// The rejection when enough GPUs could take the pod but too few can now:
// the first few full ones, each with the first reason it is full.
FilterVerdict WhyNotNow(const GpuShareArgs& args, const CycleState& cycle, const NodeView& node, const GpuFits& fits,
                        const FitCounts& c) {
  const int32_t count = cycle.request().count;
  ReasonText msg(64 + 72 * kMaxListedGpus);
  if (count == 1) {
    msg.Add("no GPU can take the pod now: ");
  } else {
    msg.Add(c.fits_now, " of the ", count, " GPUs the pod needs can take it now: ");
  }
  size_t full = 0;
  for (size_t i = 0; i < fits.size(); ++i) {
    if (fits[i] != GpuFit::kFull) continue;
    if (++full > kMaxListedGpus) continue;
    if (full > 1) msg.Add("; ");
    AppendWhyFull(msg, args, cycle, node.gpu_states[i]);
  }
  if (full > kMaxListedGpus) {
    const size_t more = full - kMaxListedGpus;
    msg.Add(" (and ", static_cast<int64_t>(more), more == 1 ? " more GPU)" : " more GPUs)");
  }
  return FilterVerdict::NotNow("insufficient_gpu", std::move(msg).Take());
}

const GpuDevice* FindGpu(absl::Span<const GpuDevice> gpus, int32_t index) {
  // Inventories are sorted by index and almost always dense (0..n-1).
  if (index >= 0 && static_cast<size_t>(index) < gpus.size() && gpus[index].index == index) return &gpus[index];
  auto it = std::lower_bound(gpus.begin(), gpus.end(), index,
                             [](const GpuDevice& g, int32_t i) { return g.index < i; });
  return it != gpus.end() && it->index == index ? &*it : nullptr;
}

// "node has 8 GPUs, 1 unhealthy (GPU 3), pod needs 8 healthy ...": the
// rejection when broken GPUs are what the pod lacks.
std::string WhyUnhealthy(const PodGpuRequest& r, absl::Span<const GpuDevice> gpus, absl::Span<const GpuFit> fits,
                         int accepted, int unhealthy) {
  std::vector<int32_t> broken;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (fits[i] == GpuFit::kUnhealthy && broken.size() < kMaxListedGpus) broken.push_back(gpus[i].index);
  }
  const bool by_model = !r.models.empty() || !r.excluded_models.empty() || !r.vendors.empty();
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

absl::InlinedVector<Candidate, 16> FittingGpus(const GpuShareArgs& args, const CycleState& cycle,
                                               const NodeView& node) {
  absl::InlinedVector<Candidate, 16> candidates;
  const PodGpuRequest& r = cycle.request();
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuState& g = node.gpu_states[i];
    if (!FitsNow(args, cycle, node.gpus[i], g)) continue;
    const GpuUsage u = g.usage();
    const MilliGpu after = u.guaranteed + cycle.guaranteed_per_gpu();
    candidates.push_back(Candidate{
        .index = g.index(),
        .burst_room = cycle.bursts() && (u.limit + r.limit) <= kOneGpu,
        .free_milli_after = (kOneGpu - after).value(),
        .free_mib_after = (UsableMemory(args, g.memory()) - u.memory - r.memory).value(),
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

bool GpuAccepted(const CycleState& cycle, const GpuDevice& gpu) {
  if (!cycle.names_models()) return true;  // the inventory's line stays unread
  const PodGpuRequest& r = cycle.request();
  if (!r.vendors.empty() && std::find(r.vendors.begin(), r.vendors.end(), gpu.vendor) == r.vendors.end()) {
    return false;
  }
  if (!r.models.empty() &&
      std::none_of(r.models.begin(), r.models.end(), [&](const std::string& m) { return GpuModelMatches(m, gpu.model); })) {
    return false;
  }
  return std::none_of(r.excluded_models.begin(), r.excluded_models.end(),
                      [&](const std::string& m) { return GpuModelMatches(m, gpu.model); });
}

absl::StatusOr<std::unique_ptr<Plugin>> GpuSharePlugin::New(PluginArgs& args) {
  GpuShareArgs a;
  auto strategy = [](const std::string& s) {
    return s == "spread" ? PlacementStrategy::kSpread : PlacementStrategy::kBinpack;
  };
  a.node_strategy = strategy(args.Enum("nodeStrategy", {"binpack", "spread"}, "binpack",
                                               "Score nodes that are already busy higher (binpack) or lower (spread)."));
  a.gpu_strategy = strategy(args.Enum("gpuStrategy", {"binpack", "spread"}, "binpack",
                                              "On a node, give the pod the fullest GPU that fits (binpack) or the emptiest (spread)."));
  a.memory_reserve = args.Memory("gpuMemoryReserve", MemoryMiB(0),
                                 "Memory held back on every GPU (driver, the runtime's CUDA context); pods' guaranteed memory fits in the rest.");
  a.max_limit_percent = args.Int("maxLimitPercent", 100, 1000, a.max_limit_percent,
                                  "Cap on the sum of burst limits on one GPU, in percent of the GPU (100: no overcommit).");
  a.max_memory_limit_percent = args.Int("maxMemoryLimitPercent", 100, 1000, a.max_memory_limit_percent,
                                         "Cap on the sum of memory limits on one GPU, in percent of its usable memory.");
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<GpuSharePlugin>(a);
}

FilterVerdict GpuSharePlugin::FilterGpus(const CycleState& cycle, const NodeView& node) const {
  if (!node.inventory_ok()) {
    return FilterVerdict::Never("inventory_unreadable",
                                absl::StrCat("node GPU inventory is unreadable: ", node.inventory_error->message()));
  }
  if (node.gpus.empty()) return FilterVerdict::Never("no_gpus", "node has no GPUs");
  const int32_t count = cycle.request().count;
  int32_t fitting = 0;
  if (cycle.names_models()) {
    for (size_t i = 0; i < node.gpus.size() && fitting < count; ++i) {
      fitting += FitsNow(args_, cycle, node.gpus[i], node.gpu_states[i]);
    }
  } else {
    fitting = CountFitting(args_, cycle, node.gpu_states, count);
  }
  if (fitting >= count) return FilterVerdict::Success();
  // Rejected: why, GPU by GPU.
  GpuFits fits;
  fits.reserve(node.gpus.size());
  for (size_t i = 0; i < node.gpus.size(); ++i) fits.push_back(FitNow(args_, cycle, node.gpus[i], node.gpu_states[i]));
  const FitCounts counts = CountFits(fits);
  if (counts.fits_now >= count) return FilterVerdict::Success();  // FitsNow is FitNow == kFits: never taken
  if (counts.accepted >= count && counts.accepted - counts.unhealthy < count) {
    return FilterVerdict::Never("gpu_unhealthy",
                                WhyUnhealthy(cycle.request(), node.gpus, fits, counts.accepted, counts.unhealthy));
  }
  if (counts.accepted < count || counts.large_enough < count) return WhyNever(args_, cycle, node, counts);
  return WhyNotNow(args_, cycle, node, fits, counts);
}

std::optional<GpuChoice> GpuSharePlugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  if (!node.inventory_ok()) return std::nullopt;
  absl::InlinedVector<Candidate, 16> candidates = FittingGpus(args_, cycle, node);
  const size_t count = cycle.gpu_count();
  if (candidates.size() < count) return std::nullopt;
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(count), candidates.end(),
                    Preference{args_});
  GpuChoice choice;
  for (size_t i = 0; i < count; ++i) choice.gpu_indices.push_back(candidates[i].index);
  return choice;
}

bool GpuSharePlugin::FitsOneGpu(const CycleState& cycle, const NodeView& node, size_t position) const {
  return node.inventory_ok() && FitsNow(args_, cycle, node.gpus[position], node.gpu_states[position]);
}

void GpuSharePlugin::RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  if (!node.inventory_ok()) return;
  absl::InlinedVector<Candidate, 16> candidates = FittingGpus(args_, cycle, node);
  const Preference better{args_};
  std::sort(candidates.begin(), candidates.end(), better);
  int32_t tier = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0 && !better.SameTier(candidates[i - 1], candidates[i])) ++tier;
    ranked.push_back(RankedGpu{.index = candidates[i].index, .tier = tier});
  }
}

int64_t GpuSharePlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  const absl::Span<const GpuDevice> gpus = node.gpus;
  if (gpus.empty() || !cycle.wants_gpus()) return 0;  // no GPU asked: no preference (file comment)
  int64_t used = 0;
  for (const GpuState& g : node.gpu_states) used += std::min(kOneGpu, g.guaranteed()).value();
  used += cycle.guaranteed_per_gpu().value() * static_cast<int64_t>(choice.gpu_indices.size());
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

std::vector<GpuShare> GpuSharePlugin::SharesFor(const CycleState& cycle, const NodeView& node,
                                                const GpuChoice& choice) const {
  const PodGpuRequest& r = cycle.request();
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
      s.memory_limit = std::max(s.memory, cycle.memory_limit_per_gpu());
    } else {
      s.guaranteed = r.guaranteed;
      s.limit = r.limit;
      s.memory = r.memory;
      s.memory_limit = cycle.memory_limit_per_gpu();
    }
    shares.push_back(std::move(s));
  }
  return shares;
}

}  // namespace tessera
