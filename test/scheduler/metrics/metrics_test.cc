#include "scheduler/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(MetricsRegistryTest, CounterWithLabelsRendersOneFamilySortedByLabels) {
  MetricsRegistry registry;
  // Labels given in different orders name the same series.
  registry.Counter("tessera_requests_total", "Requests answered.", {{"verb", "prioritize"}, {"code", "200"}}).Inc();
  registry.Counter("tessera_requests_total", "Requests answered.", {{"verb", "filter"}, {"code", "200"}}).Inc(3);
  registry.Counter("tessera_requests_total", "Ignored: first help wins.", {{"code", "200"}, {"verb", "filter"}}).Inc();

  EXPECT_EQ(registry.Render(),
            "# HELP tessera_requests_total Requests answered.\n"
            "# TYPE tessera_requests_total counter\n"
            "tessera_requests_total{code=\"200\",verb=\"filter\"} 4\n"
            "tessera_requests_total{code=\"200\",verb=\"prioritize\"} 1\n");
}

TEST(MetricsRegistryTest, SameNameAndLabelsReturnTheSameObject) {
  MetricsRegistry registry;
  Counter& a = registry.Counter("c_total", "h", {{"x", "1"}, {"y", "2"}});
  Counter& b = registry.Counter("c_total", "h", {{"y", "2"}, {"x", "1"}});
  Counter& other = registry.Counter("c_total", "h", {{"x", "1"}, {"y", "3"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &other);
  Gauge& g = registry.Gauge("g", "h");
  EXPECT_EQ(&g, &registry.Gauge("g", "h", {}));
  Histogram& h = registry.Histogram("h_seconds", "h", {}, {1.0});
  EXPECT_EQ(&h, &registry.Histogram("h_seconds", "h", {}, {2.0, 3.0}));
  EXPECT_EQ(h.bounds(), std::vector<double>{1.0});  // later bounds are ignored
}

TEST(MetricsRegistryTest, CounterIgnoresNegativeAndNaNIncrements) {
  MetricsRegistry registry;
  Counter& c = registry.Counter("c_total", "h");
  c.Inc(2.5);
  c.Inc(-1);
  c.Inc(std::nan(""));
  EXPECT_EQ(c.Value(), 2.5);
}

TEST(MetricsRegistryTest, GaugeWithoutLabelsRendersBareName) {
  MetricsRegistry registry;
  Gauge& g = registry.Gauge("tessera_open_connections", "Connections open now.");
  g.Set(5);
  g.Inc();
  g.Dec();
  g.Dec();
  g.Add(0.5);
  EXPECT_EQ(registry.Render(),
            "# HELP tessera_open_connections Connections open now.\n"
            "# TYPE tessera_open_connections gauge\n"
            "tessera_open_connections 4.5\n");
}

TEST(MetricsRegistryTest, HistogramRendersCumulativeBucketsSumAndCount) {
  MetricsRegistry registry;
  // Bounds arrive unsorted, duplicated and with +Inf; all three are normalised.
  Histogram& h = registry.Histogram("tessera_request_duration_seconds", "Request latency.", {{"verb", "filter"}},
                                    {1, 0.125, 0.5, 0.125, std::numeric_limits<double>::infinity()});
  for (double v : {0.0625, 0.125, 0.25, 2.0}) h.Observe(v);  // exact in binary, so the sum is exact

  EXPECT_EQ(registry.Render(),
            "# HELP tessera_request_duration_seconds Request latency.\n"
            "# TYPE tessera_request_duration_seconds histogram\n"
            "tessera_request_duration_seconds_bucket{verb=\"filter\",le=\"0.125\"} 2\n"
            "tessera_request_duration_seconds_bucket{verb=\"filter\",le=\"0.5\"} 3\n"
            "tessera_request_duration_seconds_bucket{verb=\"filter\",le=\"1\"} 3\n"
            "tessera_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 4\n"
            "tessera_request_duration_seconds_sum{verb=\"filter\"} 2.4375\n"
            "tessera_request_duration_seconds_count{verb=\"filter\"} 4\n");
  EXPECT_EQ(h.Count(), 4u);
}

TEST(MetricsRegistryTest, HistogramWithoutLabelsHasOnlyLe) {
  MetricsRegistry registry;
  registry.Histogram("lat_seconds", "h", {}, {0.005}).Observe(0.001);
  EXPECT_EQ(registry.Render(),
            "# HELP lat_seconds h\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.005\"} 1\n"
            "lat_seconds_bucket{le=\"+Inf\"} 1\n"
            "lat_seconds_sum 0.001\n"
            "lat_seconds_count 1\n");
}

// As Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus' own clients
// write with: a bucket bound is the `le` label's text, so a matcher such as
// {le="0.0005"} finds Tessera's buckets as it finds any exporter's.
TEST(MetricsRegistryTest, NumbersAreWrittenAsGoWritesThem) {
  struct Case {
    double value;
    const char* text;
  };
  const std::vector<Case> cases = {
      {0.0005, "0.0005"}, {0.00001, "1e-05"}, {0.00025, "0.00025"}, {123456, "123456"},     {1e6, "1e+06"},
      {1.5e6, "1.5e+06"}, {0, "0"},           {-2.5, "-2.5"},       {1.0 / 3, "0.3333333333333333"},
      {42, "42"},         {1e21, "1e+21"},    {999999, "999999"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    MetricsRegistry registry;
    registry.Gauge("g", "h").Set(c.value);
    EXPECT_EQ(registry.Render(), std::string("# HELP g h\n# TYPE g gauge\ng ") + c.text + "\n");
  }
  MetricsRegistry registry;
  registry.Histogram("lat_seconds", "h", {}, DefaultLatencyBuckets());
  EXPECT_THAT(registry.Render(), ::testing::HasSubstr("lat_seconds_bucket{le=\"0.0005\"} 0\n"));
}

TEST(MetricsRegistryTest, FamiliesAreSortedByName) {
  MetricsRegistry registry;
  registry.Gauge("b", "B").Set(1);
  registry.Counter("a_total", "A").Inc();
  registry.Counter("c_total", "C").Inc();
  EXPECT_EQ(registry.Render(),
            "# HELP a_total A\n# TYPE a_total counter\na_total 1\n"
            "# HELP b B\n# TYPE b gauge\nb 1\n"
            "# HELP c_total C\n# TYPE c_total counter\nc_total 1\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  registry.Counter("e_total", "Help with \\ and\nnewline; \"quotes\" stay.", {{"path", "a\\b\"c\nd"}}).Inc();
  EXPECT_EQ(registry.Render(),
            "# HELP e_total Help with \\\\ and\\nnewline; \"quotes\" stay.\n"
            "# TYPE e_total counter\n"
            "e_total{path=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(MetricsRegistryTest, ConcurrentIncrementsFromEightThreadsSumExactly) {
  MetricsRegistry registry;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry] {
      // Lookups race with each other and with updates; each thread caches.
      Counter& c = registry.Counter("hits_total", "h", {{"k", "v"}});
      Gauge& g = registry.Gauge("level", "h");
      Histogram& h = registry.Histogram("obs_seconds", "h", {}, {0.5});
      for (int i = 0; i < kPerThread; ++i) {
        c.Inc();
        g.Inc();
        h.Observe(i % 2 == 0 ? 0.25 : 1.0);
      }
      (void)registry.Render();  // rendering concurrently with updates is safe
    });
  }
  for (auto& t : threads) t.join();
  constexpr double kTotal = double{kThreads} * kPerThread;
  EXPECT_EQ(registry.Counter("hits_total", "h", {{"k", "v"}}).Value(), kTotal);
  EXPECT_EQ(registry.Gauge("level", "h").Value(), kTotal);
  Histogram& h = registry.Histogram("obs_seconds", "h", {}, {0.5});
  EXPECT_EQ(h.Count(), static_cast<uint64_t>(kTotal));
  EXPECT_EQ(h.BucketCount(0), static_cast<uint64_t>(kTotal / 2));
  EXPECT_EQ(h.Sum(), kTotal / 2 * 0.25 + kTotal / 2 * 1.0);
}

TEST(MetricsRegistryTest, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(0.001, 10, 4), (std::vector<double>{0.001, 0.01, 0.1, 1.0}));
  const std::vector<double> latency = DefaultLatencyBuckets();
  EXPECT_TRUE(std::is_sorted(latency.begin(), latency.end()));
  EXPECT_EQ(latency.back(), 5.0);  // kube-scheduler's extender timeout
}

using MetricsRegistryDeathTest = ::testing::Test;

TEST(MetricsRegistryDeathTest, ProgrammingErrorsAbortWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        MetricsRegistry registry;
        registry.Counter("x", "h");
        registry.Gauge("x", "h");
      },
      "registered with two different types");
  EXPECT_DEATH(MetricsRegistry().Counter("bad-name", "h"), "invalid metric name");
  EXPECT_DEATH(MetricsRegistry().Counter("ok", "h", {{"a", "1"}, {"a", "2"}}), "given twice");
  EXPECT_DEATH(MetricsRegistry().Histogram("h", "h", {{"le", "1"}}, {1}), "reserved");
}

}  // namespace
}  // namespace tessera
