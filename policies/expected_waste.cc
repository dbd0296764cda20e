#include "policies/expected_waste.h"

#include <algorithm>
#include <vector>

namespace tessera {

ExpectedWaste::ExpectedWaste(const TargetWorkload& workload) {
  // (share per GPU, arrivals weight): whole-GPU kinds at 1000, weighed by the GPUs they ask.
  struct Kind {
    int64_t share;
    int64_t weight;
  };
  std::vector<Kind> kinds;
  for (const WorkloadPod& p : workload.pods()) {
    if (p.gpus <= 0) continue;
    const bool whole = p.gpus > 1 || p.milli.value() >= 1000;
    // Σ weight ≤ 2^30 and GPUs per kind < 2^31: the weights stay below 2^61 in all.
    kinds.push_back({whole ? int64_t{1000} : p.milli.value(), p.weight * (whole ? int64_t{p.gpus} : 1)});
  }
  std::sort(kinds.begin(), kinds.end(), [](const Kind& a, const Kind& b) { return a.share < b.share; });
  for (int64_t f = 1; f <= 1000; ++f) {
    __int128 sum = 0;
    int64_t weight = 0;
    for (const Kind& k : kinds) {
      if (k.share > f) break;
      sum += static_cast<__int128>(k.weight) * scaled_[static_cast<size_t>(f - k.share)];
      weight += k.weight;
    }
    scaled_[static_cast<size_t>(f)] = weight == 0 ? f * kScale : static_cast<int64_t>(sum / weight);
  }
}

int64_t ExpectedWaste::Of(int64_t free_milli) const {
  return scaled_[static_cast<size_t>(std::clamp<int64_t>(free_milli, 0, 1000))];
}

}  // namespace tessera
