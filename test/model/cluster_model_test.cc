#include "scheduler/cache/cluster_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

NodeInventory Gpus(int n, int64_t mib = 16384) {
  NodeInventory inv;
  inv.source = InventorySource::kAnnotation;
  for (int i = 0; i < n; ++i) inv.gpus.push_back(GpuDevice{.index = i, .uuid = "", .model = "M", .memory = MemoryMiB(mib), .numa = 0});
  return inv;
}

// A pod `uid` holding `milli` (and `mib`) on each of `gpus` of `node`.
PodHolding Pod(std::string uid, std::string node, std::vector<int32_t> gpus, int64_t milli, int64_t mib = 0) {
  PodHolding p;
  p.uid = uid;
  p.pod_key = "ns/" + uid;
  p.assignment.node = std::move(node);
  for (int32_t g : gpus) {
    GpuShare s;
    s.index = g;
    s.guaranteed = s.limit = MilliGpu(milli);
    s.memory = s.memory_limit = MemoryMiB(mib);
    p.assignment.gpus.push_back(s);
  }
  return p;
}

// Guaranteed milli-GPU held on GPU `gpu` of `node` in the current snapshot.
int64_t Held(const ClusterModel& m, std::string_view node, int32_t gpu) {
  const auto snapshot = m.Current();
  const auto i = snapshot->FindNode(node);
  return i ? snapshot->View(*i).UsageOf(gpu).guaranteed.value() : -1;
}

TEST(ClusterModel, SharesOfPodsAddUpPerGpu) {
  ClusterModel m;
  m.UpsertNode("n1", Gpus(2), absl::OkStatus());
  m.UpsertPod(Pod("a", "n1", {0}, 250, 1024));
  m.UpsertPod(Pod("b", "n1", {0, 1}, 500, 2048));
  m.Publish();
  const auto s = m.Current();
  const GpuUsage u = s->View(*s->FindNode("n1")).UsageOf(0);
  EXPECT_EQ(u.guaranteed, MilliGpu(750));
  EXPECT_EQ(u.memory, MemoryMiB(3072));
  EXPECT_EQ(u.pods, 2);
  EXPECT_EQ(Held(m, "n1", 1), 500);
  EXPECT_EQ(s->gpu_count(), 2u);
}

TEST(ClusterModel, PodsAreKeyedByUidSoRepeatsAndMovesNeverCountTwice) {
  struct Step {
    std::string name;
    std::function<void(ClusterModel&)> change;
    int64_t n1_gpu0, n2_gpu0;
  };
  ClusterModel m;
  m.UpsertNode("n1", Gpus(1), absl::OkStatus());
  m.UpsertNode("n2", Gpus(1), absl::OkStatus());
  const std::vector<Step> steps = {
      {"a pod is counted once", [](ClusterModel& c) { c.UpsertPod(Pod("a", "n1", {0}, 300)); }, 300, 0},
      {"the same pod again is still counted once", [](ClusterModel& c) { c.UpsertPod(Pod("a", "n1", {0}, 300)); }, 300,
       0},
      {"a changed share replaces the old one", [](ClusterModel& c) { c.UpsertPod(Pod("a", "n1", {0}, 400)); }, 400, 0},
      {"a pod that moves frees its old node", [](ClusterModel& c) { c.UpsertPod(Pod("a", "n2", {0}, 400)); }, 0, 400},
      {"a removed pod frees its GPUs", [](ClusterModel& c) { c.RemovePod("a"); }, 0, 0},
      {"removing an unknown pod changes nothing", [](ClusterModel& c) { c.RemovePod("zz"); }, 0, 0},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    s.change(m);
    m.Publish();
    EXPECT_EQ(Held(m, "n1", 0), s.n1_gpu0);
    EXPECT_EQ(Held(m, "n2", 0), s.n2_gpu0);
  }
}

TEST(ClusterModel, PublishSharesUnchangedNodesAndViewsPointIntoTheirOwnNode) {
  ClusterModel m;
  m.UpsertNode("n1", Gpus(2), absl::OkStatus());
  m.UpsertNode("n2", Gpus(4), absl::OkStatus());
  const auto first = m.Publish();
  m.UpsertPod(Pod("a", "n2", {3}, 100));
  const auto second = m.Publish();
  const NodeIndex n1 = *second->FindNode("n1"), n2 = *second->FindNode("n2");
  // n1 did not change: the new snapshot shares its state with the old one.
  EXPECT_EQ(&second->node(n1), &first->node(*first->FindNode("n1")));
  EXPECT_NE(&second->node(n2), &first->node(*first->FindNode("n2")));
  EXPECT_EQ(second->View(n2).name, "n2");
  EXPECT_EQ(second->View(n2).gpus.size(), 4u);
  EXPECT_EQ(second->View(n2).UsageOf(3).guaranteed, MilliGpu(100));
  EXPECT_EQ(first->View(*first->FindNode("n2")).UsageOf(3).guaranteed, MilliGpu(0)) << "old snapshots never change";
  EXPECT_GT(second->generation(), first->generation());
}

TEST(ClusterModel, InconsistenciesAreReportedNotFatal) {
  ClusterModel m;
  m.UpsertNode("n1", Gpus(1, 1000), absl::OkStatus());
  m.UpsertNode("bad", NodeInventory{}, absl::InvalidArgumentError("annotation tessera.io/gpu-inventory: broken"));
  m.UpsertPod(Pod("a", "n1", {0}, 700, 800));
  m.UpsertPod(Pod("b", "n1", {0}, 700, 800));
  m.UpsertPod(Pod("c", "n1", {5}, 100));
  m.UpsertPod(Pod("d", "elsewhere", {0}, 100));
  const auto s = m.Publish();
  const NodeState& n1 = s->node(*s->FindNode("n1"));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("GPU 0 is overcommitted: pods hold 1400/1000 milli")));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("GPU 0 is overcommitted: pods hold 1600 of 1000 MiB")));
  EXPECT_THAT(n1.problems, ::testing::Contains(HasSubstr("pod ns/c holds GPU 5 which the node's inventory does not list")));
  const NodeView bad = s->View(*s->FindNode("bad"));
  EXPECT_FALSE(bad.inventory_ok());
  EXPECT_TRUE(bad.gpus.empty());
  EXPECT_EQ(s->nodes_with_inventory_errors(), 1u);
  // A pod on a node the model has no inventory for still counts there.
  EXPECT_EQ(Held(m, "elsewhere", 0), 100);
}

}  // namespace
}  // namespace tessera
