#include "scheduler/model/gpu_set_search.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>

namespace tessera {
namespace {

constexpr int kMax = GpuTopology::kMaxGpus;

// The candidates renumbered by preference rank (rank r = preference[r]), so
// that "lower bit first" is the tie-break order, with their bandwidths.
struct RankMatrix {
  int m = 0;
  uint32_t bw[kMax][kMax];  // diagonal 0
  uint32_t row_max[kMax];   // fastest link of each candidate to another
};

void Fill(const GpuTopology& t, absl::Span<const int32_t> preference, RankMatrix& r) {
  r.m = static_cast<int>(preference.size());
  for (int a = 0; a < r.m; ++a) {
    uint32_t row_max = 0;
    for (int b = 0; b < r.m; ++b) {
      const uint32_t bw = t.bandwidth_mbps(preference[a], preference[b]);  // 0 when a == b
      r.bw[a][b] = bw;
      row_max = std::max(row_max, bw);
    }
    r.row_max[a] = row_max;
  }
}

constexpr uint32_t Bit(int i) { return uint32_t{1} << i; }

// std::popcount without -mpopcnt is a libgcc call; this is a few inline
// instructions, and the search counts bits in its innermost loops.
constexpr int Count(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return static_cast<int>((((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
}

// Whether `cand` holds `need` (≥ 1) vertices that are pairwise adjacent.
bool HasClique(const uint32_t* adj, uint32_t cand, int need) {
  while (cand != 0) {
    if (Count(cand) < need) return false;
    const int v = std::countr_zero(cand);
    cand &= cand - 1;
    if (need == 1 || HasClique(adj, cand & adj[v], need - 1)) return true;
  }
  return false;
}

// The graph G_t: adj[a] holds b when a and b are joined by a link ≥ t.
void Threshold(const RankMatrix& r, uint32_t t, uint32_t* adj) {
  for (int a = 0; a < r.m; ++a) {
    uint32_t row = 0;
    for (int b = 0; b < r.m; ++b) row |= (a != b && r.bw[a][b] >= t) ? Bit(b) : 0;
    adj[a] = row;
  }
}

// Whether G_t has a k-clique. Vertices of degree < k-1 cannot be in one;
// dropping them first makes the common "no" answers immediate.
bool HasKClique(const RankMatrix& r, uint32_t t, int k, uint32_t* adj) {
  Threshold(r, t, adj);
  uint32_t cand = 0;
  for (int a = 0; a < r.m; ++a) cand |= Count(adj[a]) >= k - 1 ? Bit(a) : 0;
  return HasClique(adj, cand, k);
}

// Step 2: the k-clique of G_t with the largest total, the first in rank
// order on a tie (sets are visited in that order, and only a strictly
// larger total replaces the best).
class MaxTotalClique {
 public:
  MaxTotalClique(const RankMatrix& r, const uint32_t* adj, int k) : r_(r), adj_(adj), k_(k) {}

  uint32_t Run() {
    std::array<int64_t, kMax> gain{};
    Visit(0, 0, 0, Bit(r_.m) - 1, gain);
    return best_set_;
  }

 private:
  // `gain[v]`: Σ of v's links to the chosen GPUs, for v in `cand`.
  void Visit(uint32_t chosen, int size, int64_t total, uint32_t cand, const std::array<int64_t, kMax>& gain) {
    const int need = k_ - size;
    if (need == 0) {
      if (!found_ || total > best_total_) {
        found_ = true;
        best_total_ = total;
        best_set_ = chosen;
      }
      return;
    }
    if (Count(cand) < need) return;
    if (found_ && UpperBound(total, cand, gain, need) <= best_total_) return;
    for (uint32_t rest = cand; rest != 0;) {
      if (Count(rest) < need) break;
      const int v = std::countr_zero(rest);
      rest &= rest - 1;
      const uint32_t next = rest & adj_[v];
      std::array<int64_t, kMax> next_gain = gain;
      for (uint32_t u = next; u != 0; u &= u - 1) {
        const int w = std::countr_zero(u);
        next_gain[w] += r_.bw[v][w];
      }
      Visit(chosen | Bit(v), size + 1, total + gain[v], next, next_gain);
    }
  }

  // What any completion of the current set can reach at most: the `need`
  // largest gains, plus every pair among the newcomers at the fastest link
  // any candidate has. (A tighter bound — each newcomer's own fastest links —
  // prunes little more on real topologies and costs more per node.)
  int64_t UpperBound(int64_t total, uint32_t cand, const std::array<int64_t, kMax>& gain, int need) const {
    std::array<int64_t, kMax> gains;
    int count = 0;
    uint32_t fastest = 0;
    for (uint32_t u = cand; u != 0; u &= u - 1) {
      const int v = std::countr_zero(u);
      gains[count++] = gain[v];
      fastest = std::max(fastest, r_.row_max[v]);
    }
    std::partial_sort(gains.begin(), gains.begin() + need, gains.begin() + count, std::greater<>());
    int64_t bound = total + int64_t{need} * (need - 1) / 2 * fastest;
    for (int i = 0; i < need; ++i) bound += gains[i];
    return bound;
  }

  const RankMatrix& r_;
  const uint32_t* adj_;
  const int k_;
  bool found_ = false;
  int64_t best_total_ = 0;
  uint32_t best_set_ = 0;
};

// The best set in rank space, as a rank mask.
uint32_t BestRankSet(const RankMatrix& r, int k) {
  if (k == 1) return 1;
  if (k == r.m) return Bit(r.m) - 1;
  if (k == 2) {
    // The best pair is the fastest link; scanning pairs in rank order and
    // keeping only a strictly faster one keeps the first of equals.
    uint32_t best = 0, set = 0;
    for (int a = 0; a < r.m; ++a) {
      for (int b = a + 1; b < r.m; ++b) {
        if (r.bw[a][b] > best) {
          best = r.bw[a][b];
          set = Bit(a) | Bit(b);
        }
      }
    }
    return set;
  }
  // Step 1: the distinct link values, fastest first; the slowest always has
  // a k-clique (every pair qualifies), so the binary search has an answer.
  std::array<uint32_t, kMax * (kMax - 1) / 2> levels{};
  int count = 0;
  for (int a = 0; a < r.m; ++a) {
    for (int b = a + 1; b < r.m; ++b) levels[count++] = r.bw[a][b];
  }
  std::sort(levels.begin(), levels.begin() + count, std::greater<>());
  count = static_cast<int>(std::unique(levels.begin(), levels.begin() + count) - levels.begin());
  // Every link alike (NVSwitch): every set is as good, the first k ranks win.
  if (count == 1) return Bit(k) - 1;
  uint32_t adj[kMax];
  int lo = 0, hi = count - 1;  // the answer is in [lo, hi]
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (HasKClique(r, levels[mid], k, adj)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  Threshold(r, levels[lo], adj);
  return MaxTotalClique(r, adj, k).Run();
}

}  // namespace

GpuSetQuality QualityOf(const GpuTopology& topology, GpuMask gpus) {
  if (Count(gpus) < 2) return {};
  uint32_t bottleneck = ~uint32_t{0};
  int64_t total = 0;
  for (GpuMask a = gpus; a != 0; a &= a - 1) {
    const int i = std::countr_zero(a);
    for (GpuMask b = a & (a - 1); b != 0; b &= b - 1) {
      const uint32_t bw = topology.bandwidth_mbps(i, std::countr_zero(b));
      bottleneck = std::min(bottleneck, bw);
      total += bw;
    }
  }
  return GpuSetQuality{BandwidthMBps(bottleneck), BandwidthMBps(total)};
}

std::optional<GpuSetChoice> FindBestGpuSet(const GpuTopology& topology, absl::Span<const int32_t> preference,
                                           int32_t k) {
  const auto m = static_cast<int32_t>(preference.size());
  if (k < 1 || k > m || m > GpuTopology::kMaxGpus) return std::nullopt;
  GpuMask seen = 0;
  for (int32_t gpu : preference) {
    if (gpu < 0 || gpu >= topology.gpu_count() || (seen & Bit(gpu)) != 0) return std::nullopt;
    seen |= Bit(gpu);
  }
  RankMatrix r;
  Fill(topology, preference, r);
  GpuMask gpus = 0;
  for (uint32_t ranks = BestRankSet(r, k); ranks != 0; ranks &= ranks - 1) {
    gpus |= Bit(preference[std::countr_zero(ranks)]);
  }
  return GpuSetChoice{gpus, QualityOf(topology, gpus)};
}

std::optional<GpuSetChoice> FindBestGpuSetWithin(const GpuTopology& topology, GpuMask gpus, int32_t k) {
  absl::InlinedVector<int32_t, kMax> preference;
  for (GpuMask g = gpus; g != 0; g &= g - 1) preference.push_back(std::countr_zero(g));
  return FindBestGpuSet(topology, preference, k);
}

absl::InlinedVector<GpuSetQuality, 4> DamageProfile(const GpuTopology& topology, GpuMask free, int32_t gpu) {
  absl::InlinedVector<GpuSetQuality, 4> profile;
  const GpuMask left = free & ~Bit(gpu);
  for (int32_t size = 2; size < std::popcount(free); size *= 2) {
    std::optional<GpuSetChoice> best = FindBestGpuSetWithin(topology, left, size);
    profile.push_back(best.has_value() ? best->quality : GpuSetQuality{});
  }
  return profile;
}

int32_t LeastDamagingGpu(const GpuTopology& topology, GpuMask free, absl::Span<const int32_t> contenders) {
  for (int32_t gpu : contenders) {
    if ((free & Bit(gpu)) == 0) return gpu;
  }
  if (contenders.size() == 1) return contenders.front();
  if (topology.KnowsDamage(free)) {  // precomputed with the topology
    int32_t best = contenders.front();
    for (int32_t gpu : contenders) {
      if (topology.CompareDamage(free, gpu, best) < 0) best = gpu;
    }
    return best;
  }
  // Size by size, keep the contenders that leave the best set of that size
  // as good as any other contender does. Only a GPU inside the best set of
  // the free GPUs can make it worse, so the others need no search.
  absl::InlinedVector<int32_t, kMax> survivors(contenders.begin(), contenders.end());
  for (int32_t size = 2; size < std::popcount(free) && survivors.size() > 1; size *= 2) {
    const std::optional<GpuSetChoice> best = FindBestGpuSetWithin(topology, free, size);
    if (!best.has_value()) break;
    absl::InlinedVector<GpuSetQuality, kMax> left(survivors.size());
    GpuSetQuality most{};
    for (size_t i = 0; i < survivors.size(); ++i) {
      const int32_t gpu = survivors[i];
      if ((best->gpus & Bit(gpu)) == 0) {
        left[i] = best->quality;
      } else {
        const std::optional<GpuSetChoice> without = FindBestGpuSetWithin(topology, free & ~Bit(gpu), size);
        left[i] = without.has_value() ? without->quality : GpuSetQuality{};
      }
      most = std::max(most, left[i]);
    }
    size_t kept = 0;
    for (size_t i = 0; i < survivors.size(); ++i) {
      if (left[i] == most) survivors[kept++] = survivors[i];
    }
    survivors.resize(kept);
  }
  return survivors.front();
}

}  // namespace tessera
