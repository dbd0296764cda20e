// A small, thread-safe Prometheus registry rendering the text exposition
// format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Why our own, not Debian's prometheus-cpp: docs/operations/metrics.md, "Why
// Tessera writes the exposition format itself" (benchmarks/exposition measures both).
// Design:
//   - Series objects (Counter, Gauge, Histogram) live as long as the registry
//     and never move, so callers look a series up once (under the registry's
//     mutex) and cache the reference; updates are lock-free atomics.
//   - A family is one metric name: one # HELP / # TYPE block, any number of
//     label sets. Label sets are canonicalised (sorted by key), so
//     {a="1",b="2"} and {b="2",a="1"} name the same series.
//   - Render() is deterministic: families sorted by name, series by labels.
//
// Programming errors (an invalid metric or label name, a duplicate label key,
// the reserved label "le" on a histogram, one name used with two types) abort
// with a message: metric names are constants in our code, never user input.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

/// Label pairs {key, value} of one series. Order does not matter: the
/// registry sorts them by key.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

/// Content-Type of Render()'s output, for the /metrics response.
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

/// A monotonically increasing value (requests served, bytes read).
class Counter {
 public:
  /// Adds `v`. Counters never decrease: a negative or NaN `v` is ignored.
  void Inc(double v = 1.0);
  /// The current total.
  [[nodiscard]] double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down (connections open, cache size).
class Gauge {
 public:
  /// Replaces the value.
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  /// Adds `v` (negative to subtract).
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  /// Adds one.
  void Inc() { Add(1.0); }
  /// Subtracts one.
  void Dec() { Add(-1.0); }
  /// The current value.
  [[nodiscard]] double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// Observations counted into fixed buckets (latencies in seconds).
class Histogram {
 public:
  /// \param bounds upper bounds (inclusive, as Prometheus' `le`); sorted and
  ///        de-duplicated here, infinities dropped (+Inf is always implicit).
  explicit Histogram(std::vector<double> bounds);

  /// Counts `v` into the first bucket whose bound is >= v (NaN goes to +Inf).
  void Observe(double v);

  /// The finite upper bounds, ascending.
  [[nodiscard]] const std::vector<double>& bounds() const { return bounds_; }
  /// Non-cumulative count of bucket `i`; `i == bounds().size()` is +Inf.
  [[nodiscard]] uint64_t BucketCount(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  /// Number of observations (the sum of all buckets).
  [[nodiscard]] uint64_t Count() const;
  /// Sum of all observations.
  [[nodiscard]] double Sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  // One slot per finite bound plus +Inf; sized once in the constructor, so the
  // atomics never move.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

/// `count` bounds start, start*factor, start*factor^2, ... (count >= 1,
/// start > 0, factor > 1).
[[nodiscard]] std::vector<double> ExponentialBuckets(double start, double factor, int count);

/// Bounds for request latencies inside kube-scheduler's 5 s timeout:
/// 0.5 ms .. 5 s.
[[nodiscard]] std::vector<double> DefaultLatencyBuckets();

/// Owns every series; hands out stable references. Thread-safe.
class MetricsRegistry {
 public:
  /// An empty registry.
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  /// The counter `name`{labels}, created on first use. The same name and
  /// labels always return the same object; `help` of the first call wins.
  tessera::Counter& Counter(std::string_view name, std::string_view help, MetricLabels labels = {});

  /// The gauge `name`{labels}, created on first use (see Counter()).
  tessera::Gauge& Gauge(std::string_view name, std::string_view help, MetricLabels labels = {});

  /// The histogram `name`{labels}, created on first use with `bounds` (in
  /// seconds for latencies). A later call for an existing series returns it
  /// unchanged, ignoring `bounds`. "le" is reserved and must not be a label.
  tessera::Histogram& Histogram(std::string_view name, std::string_view help, MetricLabels labels,
                                std::vector<double> bounds);

  /// Every family in text format 0.0.4, sorted by name, then by labels.
  [[nodiscard]] std::string Render() const;

 private:
  struct Family;
  enum class Type { kCounter, kGauge, kHistogram };

  // Returns the family `name` (created with `help` if new); aborts when it
  // exists with another type. Caller holds mu_.
  Family& GetFamily(std::string_view name, std::string_view help, Type type);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;
};

}  // namespace tessera
