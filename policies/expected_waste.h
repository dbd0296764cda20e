// The milli-GPU a shared GPU is expected to end with unused: fgd's
// `leftover: outlook` extension (policies/fgd.h).
//
// FGD asks of a GPU's free only which kinds of pod it still fits, not how
// well they would fill it: 530 free fits a 470 share and leaves 60; 350 free
// fits a 320 and leaves 30, or a 230 and leaves 120. The outlook follows a
// GPU as the workload's pods that fit keep arriving at random until none fits:
//
//   W(f) = f                                   when no kind fits f
//   W(f) = Σ_k w_k · W(f − m_k) / Σ_k w_k       over the kinds k with m_k ≤ f
//
// with m_k a one-GPU kind's share, 1000 for a kind of whole GPUs (so an
// idle GPU also expects whole-GPU pods, weighed by the GPUs they ask), and
// w_k the kind's arrivals. Placing a share m on a GPU with f free changes
// the GPU's expected waste by W(f − m) − W(f); fgd counts that beside the
// fragmentation it removes. The walk ignores that other GPUs compete for the
// same pods (a 190 sliver is rarely filled: pods that small are rare, and
// W(190) is what they would leave); the fragmentation term is what weighs
// scarcity. Models and GPU memory are not in it: every kind that asks for
// GPUs counts on every GPU.
//
// Integers: W is kept in thousandths of a milli-GPU (weights ≤ 2^30, W ≤
// 10^6: products below 2^50), computed once per workload, 1001 entries.
#pragma once

#include <array>
#include <cstdint>

#include "scheduler/model/target_workload.h"

namespace tessera {

class ExpectedWaste {
 public:
  /// Thousandths of a milli-GPU per milli-GPU.
  static constexpr int64_t kScale = 1000;

  explicit ExpectedWaste(const TargetWorkload& workload);

  /// W(f) · kScale for f free milli-GPU (clamped to 0..1000).
  [[nodiscard]] int64_t Of(int64_t free_milli) const;
  /// How much a share of `share` milli-GPU on a GPU with `free_milli` free
  /// lowers W (· kScale; negative: the GPU is expected to waste more).
  [[nodiscard]] int64_t DecreaseOf(int64_t free_milli, int64_t share) const {
    return Of(free_milli) - Of(free_milli - share);
  }

 private:
  std::array<int64_t, 1001> scaled_{};  // W(f) · kScale
};

}  // namespace tessera
