// Parsing Prometheus answers and joining them into per-node telemetry.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/cache/cluster_model.h"
#include "scheduler/model/absl_compat.h"
#include "telemetry/gpu_samples.h"
#include "telemetry/prometheus_url.h"
#include "telemetry/prometheus_vector.h"
#include "test/telemetry/fake_endpoints.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::SeriesValue;
using testing::VectorAnswer;

const SeriesLabels kDcgmLabels{"Hostname", "UUID", "gpu"};

// The values of `body`'s samples (their labels die with the parser).
std::vector<double> Values(std::string_view body, absl::Status* status) {
  simdjson::dom::parser parser;
  std::vector<double> out;
  *status = ParseInstantVector(body, kDcgmLabels, parser, [&](const VectorSample& s) { out.push_back(s.value); });
  return out;
}

TEST(PrometheusVector, VisitsEverySampleWithItsLabelsAndValue) {
  simdjson::dom::parser parser;
  std::vector<std::string> seen;
  const std::string body = VectorAnswer({{"node-a", "GPU-1", "0", "97"}, {"node-b", "GPU-2", "1", "0.25"}}, 1763765000.5);
  const absl::Status status = ParseInstantVector(body, kDcgmLabels, parser, [&](const VectorSample& s) {
    seen.push_back(absl::StrCat(Absl(s.node), "/", Absl(s.uuid), "/", Absl(s.gpu), "=", s.value, "@", s.timestamp));
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_THAT(seen, ::testing::ElementsAre("node-a/GPU-1/0=97@1.76377e+09", "node-b/GPU-2/1=0.25@1.76377e+09"));
}

TEST(PrometheusVector, NonFiniteValuesArriveAsSuch) {
  absl::Status status;
  const std::vector<double> v =
      Values(VectorAnswer({{"n", "u", "0", "NaN"}, {"n", "u", "1", "+Inf"}, {"n", "u", "2", "-Inf"},
                          {"n", "u", "3", "twelve"}},
                         1),
            &status);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isinf(v[1]) && v[1] > 0);
  EXPECT_TRUE(std::isinf(v[2]) && v[2] < 0);
  EXPECT_TRUE(std::isnan(v[3]));
}

TEST(PrometheusVector, ErrorAnswersAndMalformedBodiesAreErrors) {
  struct Case {
    std::string body;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})",
       absl::StatusCode::kFailedPrecondition, "Prometheus answered an error (bad_data): parse error at char 5"},
      {"<html>502 Bad Gateway</html>", absl::StatusCode::kInvalidArgument, "not JSON"},
      {"[]", absl::StatusCode::kInvalidArgument, "not a JSON object"},
      {R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
       absl::StatusCode::kInvalidArgument, "gives a scalar, not an instant vector"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}})",
       absl::StatusCode::kInvalidArgument, "data.result[0] is not"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})",
       absl::StatusCode::kInvalidArgument, "value[1] is not a string"},
      {R"({"status":"success"})", absl::StatusCode::kInvalidArgument, "no \"data\" object"},
  };
  for (const Case& c : cases) {
    absl::Status status;
    Values(c.body, &status);
    EXPECT_EQ(status.code(), c.code) << c.body;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.body;
  }
}

TEST(PrometheusUrl, AcceptsHttpWithPortAndPrefixOnly) {
  absl::StatusOr<PrometheusEndpoint> e = ParsePrometheusUrl("http://prometheus.monitoring:9090/prom/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (PrometheusEndpoint{"prometheus.monitoring", 9090, "/prom"}));
  EXPECT_EQ(*ParsePrometheusUrl("http://[::1]:9090"), (PrometheusEndpoint{"::1", 9090, ""}));
  EXPECT_EQ(ParsePrometheusUrl("http://p")->port, 80);
  for (const char* bad : {"https://p:9090", "p:9090", "http://:9090", "http://p:0", "http://p:99999", "http://p:9x",
                          "http://p/?q=1", "http://user@p"}) {
    EXPECT_FALSE(ParsePrometheusUrl(bad).ok()) << bad;
  }
}

// The join: one table fed by several queries.
class GpuSampleTableTest : public ::testing::Test {
 protected:
  void Add(GpuMetric metric, const std::vector<SeriesValue>& series, double at = 1000) {
    simdjson::dom::parser parser;
    const absl::Status status = ParseInstantVector(VectorAnswer(series, at), kDcgmLabels, parser,
                                                   [&](const VectorSample& s) { table_.Add(metric, s); });
    ASSERT_TRUE(status.ok()) << status;
  }
  std::map<std::string, NodeTelemetry> Build(const ClusterSnapshot* snapshot, bool has_sample_time = true) {
    const GpuSampleTable::Options options{.stale_after = absl::Minutes(3),
                                          .has_sample_time = has_sample_time,
                                          .utilization_window = "1m avg",
                                          .sustained_window = "5m avg"};
    std::map<std::string, NodeTelemetry> out;
    for (auto& [name, t] : table_.Build(snapshot, options)) out.emplace(name, std::move(t));
    return out;
  }
  GpuSampleTable table_;
};

TEST_F(GpuSampleTableTest, JoinsQueriesPerGpuInTheirUnits) {
  Add(GpuMetric::kUtilization, {{"node-a", "GPU-a0", "0", "97"}, {"node-a", "GPU-a1", "1", "12.5"}});
  Add(GpuMetric::kSustainedUtilization, {{"node-a", "GPU-a0", "0", "90"}});
  Add(GpuMetric::kSmActive, {{"node-a", "GPU-a0", "0", "0.42"}});
  Add(GpuMetric::kMemoryUsed, {{"node-a", "GPU-a0", "0", "30720"}});
  Add(GpuMetric::kMemoryFree, {{"node-a", "GPU-a0", "0", "51200"}});
  Add(GpuMetric::kSampleTime, {{"node-a", "GPU-a0", "0", "999.5"}, {"node-a", "GPU-a1", "1", "998"}});
  const auto nodes = Build(nullptr);
  ASSERT_EQ(nodes.size(), 1u);
  const NodeTelemetry& t = nodes.at("node-a");
  EXPECT_EQ(t.source, TelemetrySource::kPrometheus);
  EXPECT_EQ(t.sustained_window, "5m avg");
  ASSERT_EQ(t.gpus.size(), 2u);
  const GpuTelemetry& g0 = t.gpus[0];
  EXPECT_EQ(g0.index, 0);
  EXPECT_EQ(g0.utilization, PerMille(970));
  EXPECT_EQ(g0.sustained_utilization, PerMille(900));
  EXPECT_EQ(g0.sm_active, PerMille(420));
  EXPECT_EQ(g0.memory_used, MemoryMiB(30720));
  EXPECT_EQ(g0.memory_free, MemoryMiB(51200));
  EXPECT_EQ(g0.sampled_at, absl::FromUnixMillis(999'500));
  EXPECT_EQ(t.stale_after, absl::Minutes(3));
  const GpuTelemetry& g1 = t.gpus[1];
  EXPECT_EQ(g1.utilization, PerMille(125));
  EXPECT_EQ(g1.sustained_utilization, PerMille(GpuTelemetry::kUnknown));
  EXPECT_EQ(g1.memory_free, MemoryMiB(GpuTelemetry::kUnknown));
}

TEST_F(GpuSampleTableTest, UuidsMapToTheInventoryIndexBeforeTheGpuLabel) {
  ClusterModel model;
  NodeInventory inventory;
  inventory.gpus.resize(2);
  inventory.gpus[0].uuid = "GPU-x";
  inventory.gpus[1].index = 1;
  inventory.gpus[1].uuid = "GPU-y";
  model.UpsertNode("node-a", inventory, absl::OkStatus());
  const auto snapshot = model.Publish();
  // The exporter numbers the GPUs the other way round (CUDA vs PCI order).
  Add(GpuMetric::kUtilization, {{"node-a", "GPU-x", "1", "10"}, {"node-a", "GPU-y", "0", "80"}});
  Add(GpuMetric::kSampleTime, {{"node-a", "GPU-x", "1", "999"}, {"node-a", "GPU-y", "0", "999"}});
  const NodeTelemetry t = Build(snapshot.get()).at("node-a");
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.Find(0)->utilization, PerMille(100));
  EXPECT_EQ(t.Find(1)->utilization, PerMille(800));
}

TEST_F(GpuSampleTableTest, DropsWhatItCannotTrustOrPlace) {
  Add(GpuMetric::kUtilization, {{"node-a", "GPU-0", "0", "NaN"},
                                {"node-a", "GPU-1", "1", "+Inf"},
                                {"node-a", "GPU-2", "2", "140"},
                                {"", "GPU-3", "3", "50"},
                                {"node-a", "", "", "50"},
                                {"node-a", "GPU-5", "5", "50"},
                                {"node-a", "GPU-6", "6", "60"}});
  Add(GpuMetric::kSampleTime, {{"node-a", "GPU-6", "6", "999"}});  // GPU 5's series went stale
  const auto nodes = Build(nullptr);
  const DroppedSamples& d = table_.dropped();
  EXPECT_EQ(d.invalid_value, 3u);
  EXPECT_EQ(d.no_node, 1u);
  EXPECT_EQ(d.unknown_gpu, 1u);
  EXPECT_EQ(d.not_sampled, 1u);
  ASSERT_EQ(nodes.at("node-a").gpus.size(), 1u);
  EXPECT_EQ(nodes.at("node-a").gpus[0].index, 6);
}

TEST_F(GpuSampleTableTest, WithoutASampleTimeQueryTheEvaluationTimeCounts) {
  Add(GpuMetric::kUtilization, {{"node-a", "GPU-0", "0", "50"}}, 1234.0);
  const NodeTelemetry t = Build(nullptr, /*has_sample_time=*/false).at("node-a");
  EXPECT_EQ(t.gpus[0].sampled_at, absl::FromUnixSeconds(1234));
}

}  // namespace
}  // namespace tessera
