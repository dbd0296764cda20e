// Telemetry in the cluster model (its own copy-on-write slot), bind times of
// pod holdings, and the tessera.io/gpu-utilization annotation.
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "k8s/gpu_utilization.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::BoundAt;
using testing::Holding;
using testing::Inventory;
using testing::Share;

std::shared_ptr<const NodeTelemetry> OneGpu(int64_t util_permille) {
  auto t = std::make_shared<NodeTelemetry>();
  GpuTelemetry g;
  g.utilization = PerMille(util_permille);
  t->gpus.push_back(g);
  return t;
}

// What each pod of these tests holds: 250 milli (burst 500) and 1 GiB of GPU `gpu`.
std::vector<GpuShare> QuarterOf(int32_t gpu) { return {Share(gpu, 250).Limit(500).Memory(1024)}; }

TEST(ClusterModelTelemetry, ViewsPointAtTheTelemetryInForce) {
  ClusterModel model;
  model.UpsertNode("a", Inventory(1), absl::OkStatus());
  model.UpsertNode("b", Inventory(1), absl::OkStatus());
  auto first = model.Publish();
  EXPECT_EQ(first->View(*first->FindNode("a")).telemetry, nullptr);

  const auto t = OneGpu(500);
  model.SetNodeTelemetry("a", t);
  auto second = model.Publish();
  EXPECT_EQ(second->View(*second->FindNode("a")).telemetry, t.get());
  EXPECT_EQ(second->View(*second->FindNode("b")).telemetry, nullptr);
  // The refresh copied no node: same NodeState objects as before.
  EXPECT_EQ(&second->node(0), &first->node(0));
  EXPECT_EQ(&second->node(1), &first->node(1));
  // The old snapshot is immutable.
  EXPECT_EQ(first->View(*first->FindNode("a")).telemetry, nullptr);
}

TEST(ClusterModelTelemetry, SurvivesRebuildsAndNodeSetChangesAndCanBeRemoved) {
  ClusterModel model;
  model.UpsertNode("a", Inventory(1), absl::OkStatus());
  const auto t = OneGpu(500);
  model.SetNodeTelemetry("a", t);
  model.SetNodeTelemetry("later", OneGpu(100));  // a node the model does not know yet
  model.Publish();

  model.UpsertPod(Holding("p1", "a", QuarterOf(0)));  // rebuilds node a
  auto s = model.Publish();
  EXPECT_EQ(s->View(*s->FindNode("a")).telemetry, t.get());

  model.UpsertNode("later", Inventory(1), absl::OkStatus());  // the node set changes
  s = model.Publish();
  EXPECT_EQ(s->View(*s->FindNode("a")).telemetry, t.get());
  ASSERT_NE(s->View(*s->FindNode("later")).telemetry, nullptr);
  EXPECT_EQ(s->View(*s->FindNode("later")).telemetry->gpus[0].utilization, PerMille(100));

  model.SetNodeTelemetry("a", nullptr);
  s = model.Publish();
  EXPECT_EQ(s->View(*s->FindNode("a")).telemetry, nullptr);
  EXPECT_NE(s->View(*s->FindNode("later")).telemetry, nullptr);
}

TEST(ClusterModelTelemetry, BindingsListSharesWithAKnownBindTimeNewestFirst) {
  ClusterModel model;
  model.UpsertNode("a", Inventory(2), absl::OkStatus());
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  model.UpsertPod(BoundAt(Holding("old", "a", QuarterOf(0)), t0));
  model.UpsertPod(BoundAt(Holding("new", "a", QuarterOf(1)), t0 + absl::Seconds(5)));
  model.UpsertPod(Holding("unknown", "a", QuarterOf(1)));  // bind time unknown
  const auto s = model.Publish();
  const NodeView& v = s->View(*s->FindNode("a"));
  ASSERT_EQ(v.bindings.size(), 2u);
  EXPECT_EQ(v.bindings[0], (GpuBinding{.bound_at = t0 + absl::Seconds(5), .index = 1, .guaranteed = MilliGpu(250),
                                       .limit = MilliGpu(500), .memory = MemoryMiB(1024)}));
  EXPECT_EQ(v.bindings[1].bound_at, t0);
  EXPECT_EQ(v.bindings[1].index, 0);
}

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
