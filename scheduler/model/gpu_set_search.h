// The best-connected set of k GPUs on one node, found exactly.
//
// Problem. Given the GPUs that can take a pod (in the GPU chooser's order of
// preference) and k, pick the k GPUs that maximise, in this order,
//   1. the bottleneck: the slowest link between two of them,
//   2. the total bandwidth over all their pairs,
//   3. the chooser's preference: among equally connected sets, the one whose
//      members, listed by preference rank, come first lexicographically (so
//      where topology does not discriminate — an NVSwitch node — the pod gets
//      exactly the GPUs the chooser would have given it).
//
// Algorithm (at most 16 GPUs, so sets are bit masks).
//   1. Max bottleneck. A set has bottleneck ≥ t iff it is a clique of the
//      graph G_t joining the pairs whose link is ≥ t, and "G_t has a k-clique"
//      only gets easier as t falls. So binary-search the distinct link values
//      for the largest t with a k-clique (a bitmask clique search).
//   2. Max total at that bottleneck. Depth-first over the k-cliques of G_t,
//      members taken in preference order, so sets come in exactly the
//      tie-break order of step 3; a branch is cut when its upper bound cannot
//      beat the best found — ties included, as the one found first wins them.
//      The bound: what is chosen, plus the `need` largest gains (links of a
//      candidate to the chosen GPUs), plus C(need, 2) × the fastest link of
//      any candidate. Both steps are exact, so the answer is optimal; tests
//      check it against brute force over every subset.
//   k = 2 is a scan of the pairs.
//
// Cost: microseconds for 8 GPUs, well under a millisecond for 16 (benchmarks/
// topology_benchmark.cc); nothing is allocated.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera {

/// The quality of `gpus` (see GpuSetQuality). Every GPU must be < gpu_count().
GpuSetQuality QualityOf(const GpuTopology& topology, GpuMask gpus);

/// The best `k` GPUs among `preference` (device indices, distinct, each below
/// topology.gpu_count(), most preferred first), by bottleneck, then total,
/// then preference as above.
/// \return nullopt when k < 1, or `preference` has fewer than k GPUs or breaks
///   the preconditions.
std::optional<GpuSetChoice> FindBestGpuSet(const GpuTopology& topology, absl::Span<const int32_t> preference,
                                           int32_t k);

/// The best `k` GPUs of `gpus`, ties going to the lower indices.
std::optional<GpuSetChoice> FindBestGpuSetWithin(const GpuTopology& topology, GpuMask gpus, int32_t k);

/// What taking GPU `gpu` out of the free GPUs `free` leaves: the quality of
/// the best pair, quad, set of 8 (the sizes multi-GPU jobs ask for), for the
/// sizes smaller than the number of free GPUs. Compared lexicographically,
/// a larger profile is less damage: the best pair left matters first.
absl::InlinedVector<GpuSetQuality, 4> DamageProfile(const GpuTopology& topology, GpuMask free, int32_t gpu);

/// For a single-GPU pod: among `contenders` (GPUs the chooser likes equally,
/// in its order), the one whose use damages the free GPUs' best sets least
/// (the largest DamageProfile), the first on a tie. A contender that is not
/// free costs nothing (the free GPUs stay as they are) and wins at once.
/// Up to 8 GPUs, and on any idle node, it reads tables precomputed with the
/// topology (GpuTopology::CompareDamage); otherwise it searches.
/// \pre contenders is not empty; every GPU is below topology.gpu_count().
int32_t LeastDamagingGpu(const GpuTopology& topology, GpuMask free, absl::Span<const int32_t> contenders);

}  // namespace tessera
