#include "policies/fgd/fragmentation.h"

#include <algorithm>
#include <array>
#include <limits>

#include "absl/strings/str_cat.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// One GPU's free milli-GPU is 0..1000: tables by free amount have this many rows.
constexpr size_t kFrees = static_cast<size_t>(kOneGpu.value()) + 1;

}  // namespace

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

// The column of weight_within_cpu (and row of room_weight) for a node with
// `cpu_free` free: the CPU levels it has; all of them when it is unknown.
size_t CpuRank(const TargetWorkload::Measure& measure, std::optional<int64_t> cpu_free) {
  const std::vector<int64_t>& levels = measure.cpu_levels;
  if (!cpu_free.has_value()) return levels.size();
  return static_cast<size_t>(std::upper_bound(levels.begin(), levels.end(), *cpu_free) - levels.begin());
}

int32_t ClampedFree(int64_t free_milli) {
  return static_cast<int32_t>(std::clamp<int64_t>(free_milli, 0, kOneGpu.value()));
}

// What the one-GPU groups' kinds that have the CPU (`rank`) can use where
// nothing is stranded: each GPU's free to every kind whose share it has
// room for, Σ f · room_weight[rank][f].
// (`fit`: what each GPU's free is judged by for fitting; `free` itself
// where GPU memory is not measured.)
int64_t OneGpuGroupsUsable(const TargetWorkload::Measure& measure, size_t rank, absl::Span<const int32_t> free,
                           absl::Span<const int32_t> fit) {
  const int32_t* const room_weight = measure.room_weight.data() + rank * kFrees;
  int64_t usable = 0;
  for (size_t i = 0; i < free.size(); ++i) usable += int64_t{free[i]} * room_weight[fit[i]];
  return usable;
}

// The GPUs with room for a share: how many, and the free milli-GPU they hold.
struct ShareRoom {
  int64_t gpus = 0;
  int64_t free = 0;
};

ShareRoom RoomFor(int64_t share, absl::Span<const int32_t> free, absl::Span<const int32_t> fit) {
  ShareRoom room;
  for (size_t i = 0; i < free.size(); ++i) {
    const int64_t has = fit[i] >= share ? 1 : 0;
    room.gpus += has;
    room.free += has * free[i];
  }
  return room;
}

// The milli-GPU a node's free CPU serves at the workload's ratio,
// S = cpu_free · ratio.gpu / ratio.cpu, kept exactly: `milli` exceeds S iff
// milli · ratio.cpu > cpu_free · ratio.gpu (products in 128 bits: they can
// pass 2^63), and by ⌊milli − S⌋ = milli − ⌈S⌉ whole milli-GPU. ⌈S⌉ takes a
// division, done once per node state the first time an excess is asked
// (the measure's general path asks one per share) and not at all where
// the free CPU serves all the free GPU (its linear path).
class Serviceable {
 public:
  Serviceable(int64_t cpu_free, TargetWorkload::CpuPerGpu ratio)
      : served_(static_cast<__int128>(cpu_free) * ratio.gpu), ratio_cpu_(ratio.cpu) {}
  [[nodiscard]] bool Exceeded(int64_t milli) const { return static_cast<__int128>(milli) * ratio_cpu_ > served_; }
  // By how many whole milli-GPU `milli` exceeds S (0 when it does not).
  [[nodiscard]] int64_t ExcessOf(int64_t milli) const {
    const int64_t ceiling = Ceiling();
    return milli > ceiling ? milli - ceiling : 0;
  }
  // ⌈S⌉: of `milli` free, a kind can use min(milli, ⌈S⌉) (= milli − ExcessOf).
  [[nodiscard]] int64_t Ceiling() const {
    if (!ceiling_.has_value()) {
      const __int128 quotient = served_ / ratio_cpu_;  // truncated toward zero
      const __int128 ceiling = quotient + (quotient * ratio_cpu_ != served_ && served_ > 0 ? 1 : 0);
      constexpr __int128 kMax = std::numeric_limits<int64_t>::max() / 2;  // beyond any node's milli-GPU
      ceiling_ = static_cast<int64_t>(std::clamp<__int128>(ceiling, -kMax, kMax));
    }
    return *ceiling_;
  }

 private:
  __int128 served_;
  int64_t ratio_cpu_;
  mutable std::optional<int64_t> ceiling_;  // ⌈S⌉, once asked
};

// The fragment of a kind that fits and has the CPU: the free milli-GPU on
// the GPUs too small for it, plus, with host stranding, what its usable GPU
// exceeds the free CPU's service (see the top of fragmentation.h).
int64_t FragmentWhenFits(int64_t free_total, int64_t too_small, const std::optional<Serviceable>& serviceable) {
  return too_small + (serviceable.has_value() ? serviceable->ExcessOf(free_total - too_small) : 0);
}

// A kind that accepts some GPU models only, on this node: counted GPU by GPU
// where the node mixes models, from the share table where it does not.
int64_t ModelKindFragment(const TargetWorkload& workload, const NodeGpuAccess& access, size_t m,
                          absl::Span<const int32_t> free_milli, absl::Span<const int32_t> fit_milli,
                          int64_t free_total, std::optional<int64_t> cpu_free,
                          const std::optional<Serviceable>& serviceable, const int64_t* fitting, const int64_t* fragment) {
  const WorkloadPod& kind = workload.pods()[m];
  if (!access.any_usable(m)) return free_total;
  const bool cpu_fits = !cpu_free.has_value() || *cpu_free >= kind.cpu.value();
  if (!cpu_fits) return free_total;  // it cannot run here: all of it
  if (access.uniform()) {
    const size_t share = workload.measure().share_of[m];
    return fitting[share] >= kind.gpus ? fragment[share] : free_total;
  }
  int64_t fits = 0, too_small = 0;
  for (size_t i = 0; i < free_milli.size(); ++i) {
    if (access.usable(m, i) && fit_milli[i] >= kind.milli.value()) {
      ++fits;
    } else {
      too_small += free_milli[i];
    }
  }
  return fits >= kind.gpus ? FragmentWhenFits(free_total, too_small, serviceable) : free_total;
}

}  // namespace

int64_t NodeFragmentationTimesWeight(const TargetWorkload& workload, const NodeGpuAccess& access,
                                     absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                                     const FragmentationOptions& options, absl::Span<const int64_t> fit_milli) {
  // One GPU's free milli-GPU is 0..1000.
  const size_t gpus = free_milli.size();
  const bool own_fit = !fit_milli.empty();
  constexpr size_t kStackGpus = 16;
  std::array<int32_t, 2 * kStackGpus> free_stack;
  std::vector<int32_t> free_heap;
  if (gpus > kStackGpus) free_heap.resize(2 * gpus);
  int32_t* const free = gpus > kStackGpus ? free_heap.data() : free_stack.data();
  // What each GPU's free is judged by for fitting a share: its free, or
  // less where its memory is short (see "GPU memory" in fragmentation.h).
  int32_t* const fit = own_fit ? free + gpus : free;
  int64_t free_total = 0;
  for (size_t i = 0; i < gpus; ++i) {
    free[i] = ClampedFree(free_milli[i]);
    free_total += free[i];
    if (own_fit) fit[i] = std::min(free[i], ClampedFree(fit_milli[i]));
  }
  if (free_total == 0) return 0;  // nothing free, nothing fragmented
  // Host stranding: the milli-GPU the free CPU serves at the workload's ratio.
  std::optional<Serviceable> serviceable;
  // On a node some GPU kind cannot use, only where the cluster's CPU is short
  // or no GPU model is scarce (the top of fragmentation.h).
  if (options.host_stranding && cpu_free.has_value() &&
      (access.open() || workload.cpu_short() || workload.models_plentiful()) &&
      workload.cpu_per_gpu().cpu > 0) {
    serviceable.emplace(*cpu_free, workload.cpu_per_gpu());
  }
  const TargetWorkload::Measure& measure = workload.measure();

  // Kinds of any model, group by group: a group's kinds that have the CPU
  // (weight_within_cpu at the node's CPU rank) can use the free GPU not
  // fragmented for their share if the group has its GPUs; every other kind
  // leaves all of the free GPU. So
  //   Σ w·frag = free_total · W_any − Σ_{groups with GPUs} w_cpu · (free_total − fragment).
  const size_t ranks = measure.cpu_levels.size() + 1;
  const size_t rank = CpuRank(measure, cpu_free);
  // Where no kind names models and nothing is stranded (no stranding, or
  // the free CPU serves all the free GPU: no kind's room exceeds it), what a
  // kind that fits can use is its room, and F·W is linear in each GPU's free:
  // one lookup a GPU (room_weight) and the multi-GPU groups on their own.
  const absl::Span<const int32_t> frees(free, gpus);
  const absl::Span<const int32_t> fits(fit, gpus);
  if (measure.model_kinds.empty() &&
      (!serviceable.has_value() || !serviceable->Exceeded(free_total))) {
    int64_t usable = OneGpuGroupsUsable(measure, rank, frees, fits);
    for (size_t g : measure.multi_gpu_groups) {
      const TargetWorkload::Measure::Group& group = measure.groups[g];
      const ShareRoom room = RoomFor(measure.shares[group.share], frees, fits);
      if (room.gpus >= group.gpus) usable += measure.weight_within_cpu[g * ranks + rank] * room.free;
    }
    return measure.any_model_weight * free_total - usable;
  }
  // Where no kind names models but the free CPU serves less than the free
  // GPU (C = ⌈S⌉ milli-GPU): a kind that fits can use min(room, C) of its
  // room, the free on the GPUs with room for its share. Over the one-GPU
  // groups the room is a step function of the share: with the GPUs in
  // descending fit t_1 ≥ … ≥ t_n and P_j the free of the first j, the shares
  // in (t_{j+1}, t_j] have room P_j, and room_weight[t_j] − room_weight[t_{j+1}]
  // is their weight. O(GPUs log GPUs), not O(shares).
  if (measure.model_kinds.empty()) {
    const int64_t serves = serviceable->Ceiling();
    const int32_t* const room_weight = measure.room_weight.data() + rank * kFrees;
    absl::InlinedVector<std::pair<int32_t, int32_t>, 16> by_fit;  // (fit, free), descending fit
    for (size_t i = 0; i < gpus; ++i) by_fit.emplace_back(fit[i], free[i]);
    std::sort(by_fit.begin(), by_fit.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    int64_t usable = 0;
    int64_t room = 0;
    for (size_t j = 0; j < by_fit.size(); ++j) {
      room += by_fit[j].second;
      const int32_t below = j + 1 < by_fit.size() ? by_fit[j + 1].first : 0;
      usable += std::min(room, serves) * (room_weight[by_fit[j].first] - room_weight[below]);
    }
    for (size_t g : measure.multi_gpu_groups) {
      const TargetWorkload::Measure::Group& group = measure.groups[g];
      const ShareRoom share_room = RoomFor(measure.shares[group.share], frees, fits);
      if (share_room.gpus >= group.gpus) {
        usable += measure.weight_within_cpu[g * ranks + rank] * std::min(share_room.free, serves);
      }
    }
    return measure.any_model_weight * free_total - usable;
  }
  // Per distinct share: how many GPUs have room for it, and the fragment of
  // a kind of that share that has its GPUs. A GPU has room for the shares up
  // to its free amount (shares_within, a table lookup), so a histogram of
  // the GPUs by that count, summed up share by share, gives both for every
  // share in O(GPUs + shares), without a branch on what the node holds.
  // Only kinds that name models come here (the paths above took the rest),
  // and they read it back share by share: kept as a table.
  const size_t shares = measure.shares.size();
  // GPUs with room for exactly the first j shares, and their free milli-GPU:
  // on the stack for up to 32 shares (a workload rarely has more), cleared
  // as far as used.
  constexpr size_t kStackShares = 32;
  std::array<int32_t, kStackShares + 1> gpus_at_stack, free_at_stack;
  std::vector<int32_t> gpus_at_heap, free_at_heap;
  int32_t* gpus_at = gpus_at_stack.data();
  int32_t* free_at = free_at_stack.data();
  if (shares > kStackShares) {
    gpus_at_heap.resize(shares + 1);
    free_at_heap.resize(shares + 1);
    gpus_at = gpus_at_heap.data();
    free_at = free_at_heap.data();
  }
  std::fill_n(gpus_at, shares + 1, 0);
  std::fill_n(free_at, shares + 1, 0);
  for (size_t i = 0; i < gpus; ++i) {
    const size_t j = measure.shares_within[static_cast<size_t>(fit[i])];
    ++gpus_at[j];
    free_at[j] += free[i];
  }
  absl::InlinedVector<int64_t, 32> fitting, fragment;
  int64_t usable = 0;      // Σ w · (free GPU a kind can use)
  int32_t no_room = 0;     // GPUs too small for shares[k]
  int32_t too_small = 0;   // and their free milli-GPU
  size_t g = 0;            // groups are in share order
  for (size_t k = 0; k < shares; ++k) {
    no_room += gpus_at[k];
    too_small += free_at[k];
    const int64_t with_room = static_cast<int64_t>(gpus) - no_room;
    const int64_t fragmented = FragmentWhenFits(free_total, too_small, serviceable);
    for (; g < measure.groups.size() && measure.groups[g].share == k; ++g) {
      const int64_t has_gpus = with_room >= measure.groups[g].gpus ? 1 : 0;
      usable += has_gpus * measure.weight_within_cpu[g * ranks + rank] * (free_total - fragmented);
    }
    fitting.push_back(with_room);
    fragment.push_back(fragmented);
  }
  int64_t weighted = measure.any_model_weight * free_total - usable;
  for (size_t m : measure.model_kinds) {
    weighted += workload.pods()[m].weight * ModelKindFragment(workload, access, m, frees, fits, free_total, cpu_free,
                                                             serviceable, fitting.data(), fragment.data());
  }
  return weighted;
}

void FragmentationDecreases(const TargetWorkload& workload, const NodeGpuAccess& access,
                            absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_now,
                            std::optional<int64_t> cpu_after, int64_t share, absl::Span<const size_t> positions,
                            absl::Span<int64_t> decreases, const FragmentationOptions& options,
                            absl::Span<const int64_t> fit_now, absl::Span<const int64_t> fit_after) {
  const TargetWorkload::Measure& measure = workload.measure();
  const size_t gpus = free_milli.size();
  if (options.host_stranding || !measure.model_kinds.empty()) {
    absl::InlinedVector<int64_t, 16> after(free_milli.begin(), free_milli.end());
    absl::InlinedVector<int64_t, 16> fit(fit_now.begin(), fit_now.end());
    const int64_t before = NodeFragmentationTimesWeight(workload, access, free_milli, cpu_now, options, fit_now);
    for (size_t j = 0; j < positions.size(); ++j) {
      const size_t i = positions[j];
      after[i] -= share;
      if (!fit.empty()) fit[i] = fit_after[j];
      decreases[j] = before - NodeFragmentationTimesWeight(workload, access, after, cpu_after, options, fit);
      after[i] += share;
      if (!fit.empty()) fit[i] = fit_now[i];
    }
    return;
  }
  // F·W = W_any·T − Σ_GPUs f·room_weight[rank][fit] − (multi-GPU groups' usable):
  // see TargetWorkload::Measure::room_weight and NodeFragmentationTimesWeight.
  const size_t ranks = measure.cpu_levels.size() + 1;
  const size_t rank_now = CpuRank(measure, cpu_now);
  const size_t rank_after = CpuRank(measure, cpu_after);
  const int32_t* const room_after = measure.room_weight.data() + rank_after * kFrees;
  absl::InlinedVector<int32_t, 16> free(gpus);
  absl::InlinedVector<int32_t, 16> fit(gpus);  // the free itself where GPU memory is not measured
  int64_t total = 0;
  for (size_t i = 0; i < gpus; ++i) {
    free[i] = ClampedFree(free_milli[i]);
    fit[i] = fit_now.empty() ? free[i] : std::min(free[i], ClampedFree(fit_now[i]));
    total += free[i];
  }
  int64_t usable_now = OneGpuGroupsUsable(measure, rank_now, free, fit);
  const int64_t usable_after = OneGpuGroupsUsable(measure, rank_after, free, fit);  // before the GPU changes
  // A multi-GPU group can use the GPUs with room for its share if there are
  // enough of them; lowering one GPU changes its room by that GPU alone.
  absl::InlinedVector<ShareRoom, 4> rooms;
  for (size_t g : measure.multi_gpu_groups) {
    const TargetWorkload::Measure::Group& group = measure.groups[g];
    const ShareRoom& room = rooms.emplace_back(RoomFor(measure.shares[group.share], free, fit));
    if (room.gpus >= group.gpus) usable_now += measure.weight_within_cpu[g * ranks + rank_now] * room.free;
  }
  const int64_t before = total == 0 ? 0 : measure.any_model_weight * total - usable_now;
  for (size_t j = 0; j < positions.size(); ++j) {
    const size_t i = positions[j];
    const int64_t was = free[i];
    const int64_t lowered = ClampedFree(free_milli[i] - share);
    const int64_t fit_was = fit[i];
    const int64_t fit_lowered = fit_now.empty() ? lowered : std::min<int64_t>(lowered, ClampedFree(fit_after[j]));
    const int64_t total_after = total - was + lowered;
    int64_t usable = usable_after - was * room_after[fit_was] + lowered * room_after[fit_lowered];
    for (size_t m = 0; m < rooms.size(); ++m) {
      const size_t g = measure.multi_gpu_groups[m];
      const int64_t group_share = measure.shares[measure.groups[g].share];
      const int64_t had = fit_was >= group_share ? 1 : 0;
      const int64_t has = fit_lowered >= group_share ? 1 : 0;
      const int64_t gpus_with_room = rooms[m].gpus - had + has;
      const int64_t room_free = rooms[m].free - had * was + has * lowered;
      if (gpus_with_room >= measure.groups[g].gpus) {
        usable += measure.weight_within_cpu[g * ranks + rank_after] * room_free;
      }
    }
    decreases[j] = before - (total_after == 0 ? 0 : measure.any_model_weight * total_after - usable);
  }
}

double NodeFragmentation(const TargetWorkload& workload, const NodeGpuAccess& access,
                         absl::Span<const int64_t> free_milli, std::optional<int64_t> cpu_free,
                         const FragmentationOptions& options) {
  return static_cast<double>(NodeFragmentationTimesWeight(workload, access, free_milli, cpu_free, options)) /
         static_cast<double>(workload.total_weight());
}

}  // namespace tessera
