#include "policies/fgd/expected_waste.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace tessera {
namespace {

constexpr size_t kShares = 1001;  // a share of one GPU: 0..1000 milli-GPU

// W over the hosted kinds' arrivals by share (`weight[m]`, m = 1..1000):
// one pass over the free amounts, each over the shares that have arrivals.
void Walk(const std::array<int64_t, kShares>& weight, std::array<int64_t, kShares>& scaled) {
  std::vector<int64_t> shares;  // with arrivals, ascending
  for (size_t m = 1; m < kShares; ++m) {
    if (weight[m] > 0) shares.push_back(static_cast<int64_t>(m));
  }
  scaled[0] = 0;
  for (int64_t f = 1; f <= 1000; ++f) {
    __int128 sum = 0;
    int64_t total = 0;
    for (int64_t m : shares) {
      if (m > f) break;
      sum += static_cast<__int128>(weight[static_cast<size_t>(m)]) * scaled[static_cast<size_t>(f - m)];
      total += weight[static_cast<size_t>(m)];
    }
    scaled[static_cast<size_t>(f)] = total == 0 ? f * ExpectedWaste::kScale : static_cast<int64_t>(sum / total);
  }
}

// The levels to walk: every distinct CPU request, or, beyond `most`, every
// k-th of them and the highest (so that the last level hosts every kind).
std::vector<int64_t> LevelsOf(std::vector<int64_t> cpus, size_t most) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (cpus.size() <= most) return cpus;
  std::vector<int64_t> kept;
  const size_t step = (cpus.size() + most - 3) / (most - 1);  // ⌈(n − 1) / (most − 1)⌉ ≥ 1
  for (size_t i = 0; i + 1 < cpus.size() && kept.size() + 1 < most; i += step) kept.push_back(cpus[i]);
  kept.push_back(cpus.back());
  return kept;
}

}  // namespace

ExpectedWaste::ExpectedWaste(const TargetWorkload& workload, Options options) : options_(options) {
  // A kind of several GPUs needs them free at once on one node, which a
  // walk along one GPU cannot see: fgd's fragment term judges it.
  const auto one_gpu = [](const WorkloadPod& p) { return p.gpus == 1; };
  std::vector<int64_t> cpus;
  for (const WorkloadPod& p : workload.pods()) {
    if (one_gpu(p)) cpus.push_back(p.cpu.value());
  }
  cpu_levels_ = LevelsOf(std::move(cpus), kMaxCpuLevels);
  if (cpu_levels_.empty()) cpu_levels_.push_back(std::numeric_limits<int64_t>::max());  // no kind: W(f) = f
  // Each kind joins at the first level that hosts it; the weights by share
  // grow level by level, so that the work is levels × shares², whatever
  // the number of kinds (Σ weight ≤ 2^30: no sum overflows).
  std::vector<std::vector<std::pair<size_t, int64_t>>> joining(cpu_levels_.size());  // (share, weight)
  for (const WorkloadPod& p : workload.pods()) {
    if (!one_gpu(p)) continue;
    const auto level = std::lower_bound(cpu_levels_.begin(), cpu_levels_.end(), p.cpu.value());
    joining[static_cast<size_t>(level - cpu_levels_.begin())].emplace_back(
        static_cast<size_t>(std::clamp<int64_t>(p.milli.value(), 1, 1000)), p.weight);
  }
  std::array<int64_t, kShares> weight{};
  tables_.resize(cpu_levels_.size());
  for (size_t r = 0; r < cpu_levels_.size(); ++r) {
    for (const auto& [share, w] : joining[r]) weight[share] += w;
    Walk(weight, tables_[r]);
    // Alive from the least share at which the kinds fitting it make
    // options_.rare_fit_percent of all arrivals (CPU-only and multi-GPU kinds count
    // among the arrivals, not among what fits). Σ weight ≤ 2^30: no overflow.
    int64_t fitting = 0, alive_from = 1001;
    std::array<int16_t, kShares>& best = best_left_.emplace_back();
    int64_t largest = 0;  // the largest share with arrivals at most f
    for (size_t f = 0; f < kShares; ++f) {
      if (f > 0 && weight[f] > 0) largest = static_cast<int64_t>(f);
      best[f] = static_cast<int16_t>(static_cast<int64_t>(f) - largest);
      fitting += weight[f];
      if (alive_from == 1001 && fitting > 0 && fitting * 100 >= options_.rare_fit_percent * workload.total_weight()) {
        alive_from = static_cast<int64_t>(f);
      }
    }
    alive_from_.push_back(alive_from);
  }
}

std::optional<size_t> ExpectedWaste::LevelOf(std::optional<int64_t> cpu_free) const {
  if (!cpu_free.has_value()) return tables_.size() - 1;
  // The highest level at most the free CPU.
  const auto above = std::upper_bound(cpu_levels_.begin(), cpu_levels_.end(), *cpu_free);
  if (above == cpu_levels_.begin()) return std::nullopt;
  return static_cast<size_t>(above - cpu_levels_.begin()) - 1;
}

int64_t ExpectedWaste::Of(int64_t free_milli, std::optional<int64_t> cpu_free) const {
  const size_t f = static_cast<size_t>(std::clamp<int64_t>(free_milli, 0, 1000));
  const std::optional<size_t> level = LevelOf(cpu_free);
  // Below the lowest level no kind is hosted: all of f is waste.
  return level.has_value() ? tables_[*level][f] : static_cast<int64_t>(f) * kScale;
}

bool ExpectedWaste::Dead(int64_t free_milli, std::optional<int64_t> cpu_free) const {
  const std::optional<size_t> level = LevelOf(cpu_free);
  return free_milli > options_.filled_milli && free_milli < (level.has_value() ? alive_from_[*level] : 1001);
}

int64_t ExpectedWaste::DeadLeftoverRegret(int64_t free_milli, int64_t share, std::optional<int64_t> cpu_before,
                                          std::optional<int64_t> cpu_after) const {
  const int64_t f = std::clamp<int64_t>(free_milli, 0, 1000);
  const int64_t left = f - share;
  if (left < 0 || !Dead(left, cpu_after)) return 0;
  const std::optional<size_t> level = LevelOf(cpu_before);
  const int64_t best = level.has_value() ? best_left_[*level][static_cast<size_t>(f)] : f;
  return std::max<int64_t>(left - best, 0);
}

}  // namespace tessera
