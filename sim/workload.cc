#include "sim/workload.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessera::sim {

uint64_t Random::Below(uint64_t n) {
  // Lemire, "Fast Random Integer Generation in an Interval" (2019).
  unsigned __int128 m = static_cast<unsigned __int128>(engine_()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = -n % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(engine_()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

RunWorkload MakeRunWorkload(const std::vector<TracePod>& pods, size_t node_count, int64_t capacity_milli,
                            int64_t inflation_percent, uint64_t seed) {
  Random random(seed);
  RunWorkload w;
  w.pods.resize(pods.size());
  for (uint32_t i = 0; i < w.pods.size(); ++i) w.pods[i] = i;
  for (size_t i = w.pods.size(); i > 1; --i) std::swap(w.pods[i - 1], w.pods[random.Below(i)]);
  w.originals = w.pods.size();

  int64_t total = 0;
  for (const TracePod& p : pods) total += p.total_milli();
  // limit = inflation_percent% of capacity, compared without rounding.
  const int64_t limit_times_100 = capacity_milli * inflation_percent;
  while (!pods.empty()) {
    const uint32_t draw = static_cast<uint32_t>(random.Below(pods.size()));
    if ((total + pods[draw].gpu_milli) * 100 > limit_times_100) break;
    w.pods.push_back(draw);
    total += pods[draw].total_milli();
  }

  w.node_rank.resize(node_count);
  for (uint32_t i = 0; i < node_count; ++i) w.node_rank[i] = i;
  for (size_t i = node_count; i > 1; --i) std::swap(w.node_rank[i - 1], w.node_rank[random.Below(i)]);
  return w;
}

std::vector<WorkloadPod> TypicalPods(const std::vector<TracePod>& pods, int64_t coverage_percent) {
  using Key = std::tuple<int64_t, int64_t, int32_t, std::string>;  // cpu, milli, count, spec
  std::map<Key, int64_t> counts;
  std::map<Key, const TracePod*> example;
  for (const TracePod& p : pods) {
    if (!p.mig_profile.empty()) continue;  // never on a shared GPU: the learner skips them too (WorkloadKindOf)
    const Key key{p.cpu_milli, p.gpu_milli, p.gpus, p.gpu_spec};
    ++counts[key];
    example.emplace(key, &p);
  }
  std::vector<std::pair<Key, int64_t>> groups(counts.begin(), counts.end());
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  std::vector<WorkloadPod> typical;
  int64_t covered = 0;
  int64_t total = 0;
  for (const auto& [key, count] : counts) total += count;
  for (const auto& [key, count] : groups) {
    if (covered * 100 >= coverage_percent * total) break;
    const TracePod& p = *example.at(key);
    typical.push_back(WorkloadPod{.weight = count,
                                  .cpu = MilliCpu(p.cpu_milli),
                                  .gpus = p.gpus,
                                  .milli = MilliGpu(p.gpu_milli),
                                  .models = p.models});
    covered += count;
  }
  return typical;
}

}  // namespace tessera::sim
