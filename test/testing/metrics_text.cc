#include "test/testing/metrics_text.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::testing {
namespace {

// `le="0.005"` out of a label set; +Inf for "+Inf".
double UpperBound(std::string_view labels) {
  const size_t at = labels.find("le=\"");
  if (at == std::string_view::npos) return std::numeric_limits<double>::infinity();
  std::string_view v = labels.substr(at + 4);
  v = v.substr(0, v.find('"'));
  double bound = 0;
  if (v == "+Inf" || !absl::SimpleAtod(Absl(v), &bound)) return std::numeric_limits<double>::infinity();
  return bound;
}

}  // namespace

double HistogramReading::QuantileUpperBound(double q) const {
  if (count == 0) return 0;
  const double wanted = q * static_cast<double>(count);
  for (const auto& [bound, cumulative] : buckets) {
    if (static_cast<double>(cumulative) >= wanted) return bound;
  }
  return std::numeric_limits<double>::infinity();
}

HistogramReading ReadHistogram(std::string_view text, std::string_view name, std::string_view label) {
  HistogramReading reading;
  const std::string bucket = std::string(name) + "_bucket";
  const std::string sum = std::string(name) + "_sum";
  const std::string count = std::string(name) + "_count";
  for (absl::string_view piece : absl::StrSplit(Absl(text), '\n')) {
    const std::string_view line = Std(piece);
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view metric = line.substr(0, std::min(brace, space));
    const std::string_view labels = brace < space ? line.substr(brace, space - brace) : std::string_view();
    if (!label.empty() && labels.find(label) == std::string_view::npos) continue;
    double value = 0;
    if (!absl::SimpleAtod(Absl(line.substr(space + 1)), &value)) continue;
    if (metric == bucket) {
      reading.buckets.emplace_back(UpperBound(labels), static_cast<uint64_t>(std::llround(value)));
    } else if (metric == sum) {
      reading.sum = value;
    } else if (metric == count) {
      reading.count = static_cast<uint64_t>(std::llround(value));
    }
  }
  return reading;
}

}  // namespace tessera::testing
