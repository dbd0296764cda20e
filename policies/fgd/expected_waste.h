// The milli-GPU a shared GPU is expected to end with unused: fgd's
// `leftover: outlook` extension (policies/fgd/fgd.h).
//
// FGD asks of a GPU's free only which kinds of pod it still fits, not how
// well they would fill it: 530 free fits a 470 share and leaves 60; 350 free
// fits a 320 and leaves 30, or a 230 and leaves 120. The outlook follows a
// GPU as the workload's pods that fit keep arriving at random until none fits:
//
//   W(f) = f                                   when no kind fits f
//   W(f) = Σ_k w_k · W(f − m_k) / Σ_k w_k       over the kinds k with m_k ≤ f
//
// over the kinds of one GPU, with m_k a kind's share, 1000 for a kind of a
// whole GPU (so an idle GPU also expects whole-GPU pods), and w_k the
// kind's arrivals. Kinds of several GPUs are not in it: they need GPUs free
// at once on one node, which a walk along one GPU cannot see (fgd's
// fragment term judges that; counted, the CPU cost below lost multigpu40
// at node CPU × 0.5 0.08 more). Placing a share m on a GPU with f free
// changes the GPU's expected waste by W(f − m) − W(f); fgd counts that
// beside the fragmentation it removes. The walk ignores that other GPUs
// compete for the same pods (a 190 sliver is rarely filled: pods that small
// are rare, and W(190) is what they would leave); the fragmentation term is
// what weighs scarcity. Models and GPU memory are not in it: every kind
// that asks for GPUs counts on every GPU.
//
// The node's CPU. A kind the node's free CPU cannot host does not fill its
// GPUs, so W is walked once per CPU level, over the kinds asking at most
// that much CPU, and read at the node's free CPU (no kind hosted: W(f) = f).
// A share on a node with c free CPU before the pod and c' after it lowers W
// by W_c(f) − W_c'(f − m): a pod that takes the CPU its GPU's leftover
// needs is charged for it, and filling a GPU the node's CPU has stranded
// gains what would otherwise be lost. The walk does not follow the CPU down
// as the kinds fill the GPU, nor share it with the node's other GPUs: it is
// the first-order correction. Where the cluster is short of CPU
// (TargetWorkload::cpu_short), fgd also charges a share for what the CPU it
// takes does to the node's other GPUs: Σ W_c(f_i) − W_c'(f_i) over them
// (measured: docs/experiments/2026-11-26-leftover-outlook.md).
//
// Dead leftovers. The walk is optimistic: it waits on each GPU for a kind
// that fits, however rare. A leftover only rare kinds fit stays empty in
// practice: on the Alibaba default trace 190 milli-GPU is left beside every
// 810 share, some 1000 GPUs' worth, and the pods of 220 or less that would
// fill it make 1.4 % of arrivals; a 320 share that joins a lone 470 leaves
// 210, which those same pods would have to fill, where the next 470 would
// have left 60 (and the 320 gone with a 650, leaving 30). So a leftover is
// *dead* when it is more than `filledMilli` (a GPU that full is filled: 470
// + 470 leave 60, 650 + 320 leave 30) and the kinds the node's CPU hosts
// that fit it make less than `rareFitPercent` of the arrivals (every kind
// counted among the arrivals). A share that leaves a GPU dead *regrets*
// what it leaves beyond what the best-fitting kind the node hosted would
// have left there (0 where none leaves less: a node short of the CPU a
// better partner asks has none to wait for). fgd charges that regret on
// GPUs other pods share already (policies/fgd/fgd.h; docs/experiments/2026-11-27-dead-leftovers.md).
//
// Integers: W is kept in thousandths of a milli-GPU (weights ≤ 2^30, W ≤
// 10^6: products below 2^50), computed once per workload: 1001 entries per
// CPU level, at most kMaxCpuLevels levels, kinds merged by share so that
// the work is bounded however long the list (levels × 1000 × shares).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "scheduler/model/target_workload.h"

namespace tessera {

/// What makes a leftover dead: fgd's args `filledMilli` and `rareFitPercent`.
struct ExpectedWasteOptions {
  /// A leftover of at most this is a filled GPU, not a dead one.
  int64_t filled_milli = 50;
  /// Kinds that together make less than this share of the arrivals fill no
  /// leftover. Measured on the default trace (10 seeds, Alloc %(100)),
  /// whose 160 and 220 shares are rare and 230s less so: 1 %, 96.14; 2 %,
  /// 96.10; 3 %, which counts the 230s rare too, 95.94; without dead
  /// leftovers, 95.92. 2 % sits inside the range that works.
  int64_t rare_fit_percent = 2;
};

class ExpectedWaste {
 public:
  /// Thousandths of a milli-GPU per milli-GPU.
  static constexpr int64_t kScale = 1000;

  /// At most this many CPU levels (tables of 1001): a workload with more
  /// distinct CPU requests keeps every k-th and the highest, and a node's CPU
  /// is read at the highest kept level at most its free (its kinds may then
  /// be fewer than it hosts).
  static constexpr size_t kMaxCpuLevels = 64;
  using Options = ExpectedWasteOptions;

  explicit ExpectedWaste(const TargetWorkload& workload, Options options = {});

  /// W(f) · kScale for f free milli-GPU (clamped to 0..1000) on a node
  /// with `cpu_free` free milli-CPU (nullopt: unknown, every kind counts).
  [[nodiscard]] int64_t Of(int64_t free_milli, std::optional<int64_t> cpu_free = std::nullopt) const;
  /// How much a share of `share` milli-GPU lowers W (· kScale; negative:
  /// the GPU is expected to waste more) on a GPU with `free_milli` free, on
  /// a node with `cpu_before` free CPU before the pod and `cpu_after` after.
  [[nodiscard]] int64_t DecreaseOf(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before = std::nullopt,
                                   std::optional<int64_t> cpu_after = std::nullopt) const {
    return Of(free_milli, cpu_before) - Of(free_milli - share, cpu_after);
  }
  /// Whether `free_milli` left on a GPU of a node with `cpu_free` free CPU
  /// is a dead leftover (above; nullopt: every kind hosted).
  [[nodiscard]] bool Dead(int64_t free_milli, std::optional<int64_t> cpu_free = std::nullopt) const;
  /// The regret (milli-GPU, above) of a share of `share` on a GPU with
  /// `free_milli` free, on a node with `cpu_before` free CPU before the pod
  /// and `cpu_after` after: what it leaves, when that is dead, less what the
  /// best-fitting kind hosted at `cpu_before` would leave; else 0.
  [[nodiscard]] int64_t DeadLeftoverRegret(int64_t free_milli, int64_t share,
                                           std::optional<int64_t> cpu_before = std::nullopt,
                                           std::optional<int64_t> cpu_after = std::nullopt) const;
  /// The CPU levels walked (ascending milli-CPU); the last hosts every kind.
  [[nodiscard]] const std::vector<int64_t>& cpu_levels() const { return cpu_levels_; }

 private:
  using Table = std::array<int64_t, 1001>;  // W(f) · kScale
  // The level whose kinds a node with `cpu_free` free hosts (the last for
  // nullopt); nullopt below the lowest level: no kind.
  [[nodiscard]] std::optional<size_t> LevelOf(std::optional<int64_t> cpu_free) const;
  Options options_;
  std::vector<int64_t> cpu_levels_;         // ascending
  std::vector<Table> tables_;               // [r]: the kinds asking at most cpu_levels_[r]; never empty
  // [r]: the least leftover the kinds of level r fitting it make
  // options_.rare_fit_percent of the arrivals at (1001: never); dead below it.
  std::vector<int64_t> alive_from_;
  // [r][f]: what the best-fitting kind of level r leaves of f (f: none fits).
  std::vector<std::array<int16_t, 1001>> best_left_;
};

}  // namespace tessera
