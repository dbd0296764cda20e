// Telemetry in the cluster model (its own copy-on-write slot) and bind times
// of pod holdings.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

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

}  // namespace
}  // namespace tessera
