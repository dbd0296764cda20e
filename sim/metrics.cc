#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace tessera::sim {

double RoundHalfEven(double x) { return std::nearbyint(x); }  // the default rounding mode: to nearest, ties to even
double Round2(double x) { return std::nearbyint(x * 100) / 100; }

RunCurve CurveOf(const std::vector<ReplayEvent>& events, int64_t capacity_milli) {
  struct Bin {
    double alloc = 0, frag = 0;
    int64_t events = 0;
  };
  std::array<Bin, kBins> bins{};
  const double capacity = static_cast<double>(capacity_milli);
  for (const ReplayEvent& e : events) {
    const double arrived = RoundHalfEven(100.0 * static_cast<double>(e.arrived_milli) / capacity);
    if (arrived < 0 || arrived > kMaxArrivedPercent) continue;
    Bin& b = bins[static_cast<size_t>(arrived)];
    b.alloc += Round2(100.0 * static_cast<double>(e.used_milli) / capacity);
    b.frag += Round2(100.0 * e.fragmented_milli / capacity);
    ++b.events;
  }
  RunCurve curve;
  for (size_t x = 0; x < kBins; ++x) {
    Bin b = bins[x];
    if (b.events == 0) {  // the analysis scripts' fallback: the neighbouring bins
      for (size_t y = x == 0 ? 0 : x - 1; y <= std::min(x + 1, kBins - 1); ++y) {
        b.alloc += bins[y].alloc;
        b.frag += bins[y].frag;
        b.events += bins[y].events;
      }
    }
    if (b.events == 0) continue;
    curve.alloc_percent[x] = Round2(b.alloc / static_cast<double>(b.events));
    curve.fragmentation_percent[x] = Round2(b.frag / static_cast<double>(b.events));
  }
  return curve;
}

Stats StatsOf(std::vector<double> values) {
  Stats s;
  s.n = values.size();
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n > 1) {
    double squares = 0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(squares / static_cast<double>(s.n - 1));
  }
  std::sort(values.begin(), values.end());
  s.median = s.n % 2 == 1 ? values[s.n / 2] : (values[s.n / 2 - 1] + values[s.n / 2]) / 2;
  return s;
}

}  // namespace tessera::sim
