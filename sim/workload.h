// What one replay run submits, and in what order (the paper's "workload
// tuning"; docs/benchmarks.md, "Placement quality"), and the target workload
// FGD-style plugins measure fragmentation against.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "policies/fgd/fragmentation.h"
#include "sim/trace.h"

namespace tessera::sim {

/// A seeded generator with a portable uniform draw (std's distributions
/// differ between standard libraries; a replay must not).
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  /// Uniform in [0, n), n ≥ 1 (Lemire's unbiased multiply-shift).
  uint64_t Below(uint64_t n);

 private:
  std::mt19937_64 engine_;
};

/// One run's submissions and the node tie-break order.
struct RunWorkload {
  /// Pods in submission order, as indices into the name-sorted trace: the
  /// trace shuffled, then clones drawn with replacement.
  std::vector<uint32_t> pods;
  /// rank[node] (nodes in name order): ties between equal scores go to the
  /// lowest rank, a uniformly random permutation per seed.
  std::vector<uint32_t> node_rank;
  /// How many of `pods` are the shuffled originals (the rest are clones).
  size_t originals = 0;
};

/// Builds run `seed`'s workload from the name-sorted `pods`:
///   1. shuffle the pods (Fisher–Yates);
///   2. draw pods uniformly with replacement and append clones while the
///      total GPU request stays within `inflation_percent` of
///      `capacity_milli`; stop before the first clone whose *per-GPU* milli
///      would pass it (the artifact's test; the total adds count × milli);
///   3. draw the node ranks (a permutation of `node_count`);
/// all from one generator seeded with `seed`.
RunWorkload MakeRunWorkload(const std::vector<TracePod>& pods, size_t node_count, int64_t capacity_milli,
                            int64_t inflation_percent, uint64_t seed);

/// The kinds of pod of the trace that cover `coverage_percent` of its pods
/// (the paper's "typical pods"): pods are grouped by (cpu, per-GPU milli,
/// GPU count, gpu_spec), groups sorted by count, larger first, ties by the
/// key, larger first; groups are taken until they cover the share. Weights
/// are the pod counts. Pods asking for a MIG instance are left out (they
/// never take a share of a GPU; the server's learner leaves them out too).
std::vector<WorkloadPod> TypicalPods(const std::vector<TracePod>& pods, int64_t coverage_percent);

}  // namespace tessera::sim
