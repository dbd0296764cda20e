// The FGD paper's metrics (Weng et al., ATC '23):
// the allocation curve against arrived workload, binned exactly as the
// artifact's analysis scripts bin it, and statistics over seeds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/replay.h"

namespace tessera::sim {

/// Bins of arrived workload, 0..130 % of GPU capacity.
inline constexpr int kMaxArrivedPercent = 130;
inline constexpr size_t kBins = kMaxArrivedPercent + 1;

/// One run's curves: for each arrived % X, the mean over the events whose
/// arrived % rounds (half to even) to X of the allocation % (rounded to 2
/// decimals per event), itself rounded to 2 decimals; events in X ± 1 when
/// none lands in X; nullopt when none lands there either. The same for the
/// fragmentation amount (% of capacity).
struct RunCurve {
  std::array<std::optional<double>, kBins> alloc_percent{};
  std::array<std::optional<double>, kBins> fragmentation_percent{};
};

RunCurve CurveOf(const std::vector<ReplayEvent>& events, int64_t capacity_milli);

/// Python's round(x) and round(x, 2) on doubles: half to even.
double RoundHalfEven(double x);
double Round2(double x);

/// Mean, sample standard deviation and median of a set of runs' values.
struct Stats {
  double mean = 0;
  double sd = 0;
  double median = 0;
  size_t n = 0;
};
Stats StatsOf(std::vector<double> values);

}  // namespace tessera::sim
