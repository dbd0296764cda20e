// The tessera.io/gpu-utilization annotation a node agent writes: what the
// watch reads into the cluster model's telemetry.
#include "k8s/gpu_utilization.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(GpuUtilizationAnnotation, ParsesTheAgentsReport) {
  absl::StatusOr<NodeTelemetry> t = k8s::ParseGpuUtilization(
      R"({"timestamp":"2026-11-21T22:40:12Z","window":"30s avg","gpus":[
          {"index":1,"uuid":"GPU-b","utilization":97,"sustainedUtilization":88.5,"memoryUsedMiB":30720,"memoryFreeMiB":50176},
          {"index":0,"utilization":0,"smActive":0.25,"extra":"ignored"}]})",
      absl::Minutes(3));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->source, TelemetrySource::kAnnotation);
  EXPECT_EQ(t->utilization_window, "30s avg");
  EXPECT_EQ(t->sustained_window, "sustained");
  ASSERT_EQ(t->gpus.size(), 2u);
  const absl::Time at = absl::FromCivil(absl::CivilSecond(2026, 11, 21, 22, 40, 12), absl::UTCTimeZone());
  EXPECT_EQ(t->gpus[0].index, 0);
  EXPECT_EQ(t->gpus[0].sm_active, PerMille(250));
  EXPECT_EQ(t->gpus[0].sampled_at, at);
  EXPECT_EQ(t->stale_after, absl::Minutes(3));
  EXPECT_EQ(t->gpus[1].utilization, PerMille(970));
  EXPECT_EQ(t->gpus[1].sustained_utilization, PerMille(885));
  EXPECT_EQ(t->gpus[1].memory_used, MemoryMiB(30720));
  EXPECT_EQ(t->gpus[1].memory_free, MemoryMiB(50176));
}

TEST(GpuUtilizationAnnotation, ReportsEveryProblemAtOnce) {
  const absl::StatusOr<NodeTelemetry> t = k8s::ParseGpuUtilization(
      R"({"timestamp":"yesterday","gpus":[{"index":0},{"utilization":5},
          {"index":0},{"index":2,"smActive":2,"memoryUsedMiB":-1},{"index":4,"utilization":140}]})",
      absl::Minutes(3));
  ASSERT_FALSE(t.ok());
  const std::string m(t.status().message());
  EXPECT_THAT(m, HasSubstr("annotation tessera.io/gpu-utilization: \"timestamp\" must be an RFC 3339 time"));
  EXPECT_THAT(m, HasSubstr("gpus[4]: \"utilization\" must be a number in 0..100 (percent)"));
  EXPECT_THAT(m, HasSubstr("gpus[1]: \"index\" is required"));
  EXPECT_THAT(m, HasSubstr("gpus[2]: \"index\" 0 repeats gpus[0]"));
  EXPECT_THAT(m, HasSubstr("gpus[3]: \"smActive\" must be a number in 0..1 (ratio)"));
  EXPECT_THAT(m, HasSubstr("gpus[3]: \"memoryUsedMiB\" must be a non-negative integer"));
  for (const char* bad : {"", "[]", "{\"gpus\":[]}", "{\"timestamp\":\"2026-11-21T22:40:12Z\"}"}) {
    EXPECT_FALSE(k8s::ParseGpuUtilization(bad, absl::Minutes(3)).ok()) << bad;
  }
}

}  // namespace
}  // namespace tessera
