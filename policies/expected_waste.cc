#include "policies/expected_waste.h"

#include <algorithm>
#include <limits>

namespace tessera {
namespace {

// A kind as the walk reads it: its share of one GPU (1000 for a kind of one
// whole GPU), its arrivals' weight and the CPU it asks.
struct Kind {
  int64_t share;
  int64_t weight;
  int64_t cpu;
};

// W over the kinds (in share order) asking at most `cpu_max`.
void Walk(const std::vector<Kind>& kinds, int64_t cpu_max, std::array<int64_t, 1001>& scaled) {
  scaled[0] = 0;
  for (int64_t f = 1; f <= 1000; ++f) {
    __int128 sum = 0;
    int64_t weight = 0;
    for (const Kind& k : kinds) {
      if (k.share > f) break;
      if (k.cpu > cpu_max) continue;
      sum += static_cast<__int128>(k.weight) * scaled[static_cast<size_t>(f - k.share)];
      weight += k.weight;
    }
    scaled[static_cast<size_t>(f)] = weight == 0 ? f * ExpectedWaste::kScale : static_cast<int64_t>(sum / weight);
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

ExpectedWaste::ExpectedWaste(const TargetWorkload& workload) {
  std::vector<Kind> kinds;
  std::vector<int64_t> cpus;
  for (const WorkloadPod& p : workload.pods()) {
    // A kind of several GPUs needs them free at once on one node, which a
    // walk along one GPU cannot see: fgd's fragment term judges it.
    if (p.gpus != 1) continue;
    kinds.push_back({std::min<int64_t>(p.milli.value(), 1000), p.weight, p.cpu.value()});
    cpus.push_back(p.cpu.value());
  }
  std::sort(kinds.begin(), kinds.end(), [](const Kind& a, const Kind& b) { return a.share < b.share; });
  cpu_levels_ = LevelsOf(std::move(cpus), kMaxCpuLevels);
  if (cpu_levels_.empty()) cpu_levels_.push_back(std::numeric_limits<int64_t>::max());  // no kind: W(f) = f
  tables_.resize(cpu_levels_.size());
  for (size_t r = 0; r < cpu_levels_.size(); ++r) Walk(kinds, cpu_levels_[r], tables_[r]);
}

int64_t ExpectedWaste::Of(int64_t free_milli, std::optional<int64_t> cpu_free) const {
  const size_t f = static_cast<size_t>(std::clamp<int64_t>(free_milli, 0, 1000));
  if (!cpu_free.has_value()) return tables_.back()[f];
  // The highest level at most the free CPU; below the lowest no kind is hosted: all of f is waste.
  const auto above = std::upper_bound(cpu_levels_.begin(), cpu_levels_.end(), *cpu_free);
  if (above == cpu_levels_.begin()) return static_cast<int64_t>(f) * kScale;
  return tables_[static_cast<size_t>(above - cpu_levels_.begin()) - 1][f];
}

}  // namespace tessera
