// The PromQL scanner the dashboard test reads metric names with
// (test/testing/promql_names.h): names, not functions, labels, keywords,
// strings, durations or Grafana's variables.
#include "test/testing/promql_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

struct Case {
  const char* name;
  const char* expr;
  std::set<std::string> names;
};

TEST(MetricNamesInPromQl, FindsTheMetricsAndNothingElse) {
  const std::vector<Case> cases = {
      {"a bare name", "up", {"up"}},
      {"a name with matchers whose values look like names",
       R"(tessera_binds_total{result="success", verb=~"filter|bind"})", {"tessera_binds_total"}},
      {"functions and aggregations are not metrics",
       "sum by (verb) (rate(tessera_http_requests_total[5m]))", {"tessera_http_requests_total"}},
      {"the label list after by, without, on, ignoring, group_left are labels",
       "a / on (pool, model) group_left (tenant) b + ignoring (x) c", {"a", "b", "c"}},
      {"an aggregation with its clause first", "sum without (le) (d) + max by (pool) (e)", {"d", "e"}},
      {"an aggregation's clause after its argument",
       "sum(x{a=\"1\"}) by (le)", {"x"}},
      {"histogram series keep their suffix",
       "histogram_quantile(0.99, sum by (le) (rate(tessera_bind_duration_seconds_bucket[$__rate_interval])))",
       {"tessera_bind_duration_seconds_bucket"}},
      {"keywords, numbers, durations and offsets", "a and b or c unless d offset 5m > bool 1e3 * inf",
       {"a", "b", "c", "d"}},
      {"strings with parentheses and names inside", R"q(label_replace(x, "dst", "$1", "src", "(up|down)"))q", {"x"}},
      {"grafana variables are not metrics", R"(x{pool=~"$pool"} / ${scale} + $__interval_ms)", {"x"}},
      {"a subquery and the @ modifier", "max_over_time(x[1h:5m] @ end())", {"x"}},
      {"__name__ names a metric", R"({__name__="tessera_leader", job="t"})", {"tessera_leader"}},
      {"names with colons (recording rules)", "job:requests:rate5m", {"job:requests:rate5m"}},
      {"grafana's label_values reads its selector",
       R"(label_values(tessera_pool_gpus{pool=~"$pool"}, model))", {"tessera_pool_gpus"}},
      {"label_values of a label alone reads no metric", "label_values(pool)", {}},
      {"unary minus and nested parentheses", "-(max by (t) (a) - (b))", {"a", "b"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MetricNamesInPromQl(c.expr), c.names);
  }
}

TEST(SampleNamesInExposition, ReadsSampleLinesNotCommentsAndKeepsHistogramSeries) {
  const char* text =
      "# HELP h_seconds Time.\n# TYPE h_seconds histogram\n"
      "h_seconds_bucket{le=\"0.5\"} 1\nh_seconds_bucket{le=\"+Inf\"} 1\nh_seconds_sum 0.2\nh_seconds_count 1\n"
      "# TYPE c_total counter\nc_total{a=\"x y\"} 3\ng 1\n";
  EXPECT_THAT(SampleNamesInExposition(text),
              ElementsAre("c_total", "g", "h_seconds_bucket", "h_seconds_count", "h_seconds_sum"));
  EXPECT_THAT(SampleNamesInExposition(""), IsEmpty());
}

}  // namespace
}  // namespace tessera::testing
