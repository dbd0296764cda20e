// Reads one histogram out of Prometheus' text exposition format (what
// Tessera's /metrics answers), for tests and benchmarks that report Tessera's
// own latencies.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::testing {

struct HistogramReading {
  uint64_t count = 0;
  double sum = 0;                                   ///< Seconds, for a duration histogram.
  std::vector<std::pair<double, uint64_t>> buckets; ///< (upper bound, cumulative count), +Inf last.

  [[nodiscard]] double mean() const { return count == 0 ? 0 : sum / static_cast<double>(count); }
  /// The upper bound of the first bucket holding the q-quantile (0 < q <= 1):
  /// an upper estimate, as precise as the buckets. 0 when empty.
  [[nodiscard]] double QuantileUpperBound(double q) const;
};

/// The samples of histogram `name` whose labels include `label` (written as
/// on the wire, e.g. `verb="filter"`; empty matches any). Zero counts when the
/// histogram or the label is absent.
HistogramReading ReadHistogram(std::string_view text, std::string_view name, std::string_view label);

}  // namespace tessera::testing
