// The simulator's cluster: a pod placed and then removed leaves the node as
// it was, under a new version.
#include "sim/cluster.h"

#include <vector>

#include "gtest/gtest.h"

namespace tessera::sim {
namespace {

PodGpuRequest Request(int32_t gpus, int64_t milli) {
  PodGpuRequest r;
  r.count = gpus;
  r.whole_gpu = milli >= 1000;
  r.guaranteed = r.limit = MilliGpu(milli);
  r.host = HostRequest{.cpu = MilliCpu(4000), .memory = MemoryMiB(2048)};
  return r;
}

GpuShare Share(int32_t index, int64_t milli) {
  return GpuShare{.index = index, .uuid = {}, .guaranteed = MilliGpu(milli), .limit = MilliGpu(milli),
                  .memory = MemoryMiB(0), .memory_limit = MemoryMiB(0)};
}

TEST(ClusterTest, RemovingAPodUndoesItsPlacementAndMovesTheVersion) {
  Cluster cluster({TraceNode{"n", 32000, 65536, 2, "G2"}});
  const std::vector<GpuShare> half = {Share(0, 500)};
  const std::vector<GpuShare> both = {Share(0, 500), Share(1, 1000)};
  cluster.Place(0, Request(1, 500), half);
  const NodeView before = cluster.View(0);
  const std::vector<GpuUsage> usage_before(before.usage.begin(), before.usage.end());
  const HostResources host_before = *before.host;
  const std::vector<GpuPodShape> shapes_before(before.pod_shapes.begin(), before.pod_shapes.end());
  const uint32_t version = cluster.version(0);

  cluster.Place(0, Request(2, 500), both);
  EXPECT_EQ(cluster.used_milli(), 2000);
  EXPECT_EQ(cluster.View(0).pod_shapes.size(), 2u);
  cluster.Remove(0, Request(2, 500), both);

  const NodeView& after = cluster.View(0);
  EXPECT_EQ(std::vector<GpuUsage>(after.usage.begin(), after.usage.end()), usage_before);
  EXPECT_EQ(after.host->cpu_used, host_before.cpu_used);
  EXPECT_EQ(after.host->memory_used, host_before.memory_used);
  EXPECT_EQ(std::vector<GpuPodShape>(after.pod_shapes.begin(), after.pod_shapes.end()), shapes_before);
  EXPECT_EQ(after.gpu_states[1].guaranteed(), MilliGpu(0));
  EXPECT_EQ(cluster.used_milli(), 500);
  EXPECT_EQ(cluster.version(0), version + 2) << "placed and removed: two changes";

  cluster.Remove(0, Request(1, 500), half);
  EXPECT_TRUE(cluster.View(0).pod_shapes.empty());
  EXPECT_EQ(cluster.View(0).host->cpu_used, MilliCpu(0));
}

TEST(ClusterTest, AMigInstanceIsHeldWhilePlacedAndFreeOnceRemoved) {
  TraceNode node{"n", 32000, 65536, 2, "NVIDIA-A100-SXM4-80GB"};
  node.vendor = GpuVendor::kNvidia;
  node.mig = {MigInstance{.profile = "3g.40gb", .start = 0, .uuid = {}},
              MigInstance{.profile = "3g.40gb", .start = 4, .uuid = {}}};
  Cluster cluster({node});
  ASSERT_TRUE(cluster.View(0).gpus[1].mig_mode);
  EXPECT_EQ(cluster.View(0).gpu_states[1].mig_free_slots(), 0b1000) << "3g.40gb is the A100-80GB's fourth profile";

  PodGpuRequest request;
  request.mig_profile = "3g.40gb";
  request.guaranteed = request.limit = MilliGpu(428);
  std::vector<GpuShare> at_four = {Share(1, 428)};
  at_four[0].mig = MigInstance{.profile = "3g.40gb", .start = 4, .uuid = {}};
  std::vector<GpuShare> at_zero = at_four;
  at_zero[0].mig->start = 0;

  cluster.Place(0, request, at_four);
  EXPECT_EQ(cluster.View(0).UsageOf(1).mig_held_starts, 0b1'0000);
  EXPECT_EQ(cluster.View(0).gpu_states[1].mig_free_slots(), 0b1000) << "the instance at 0 is still free";
  cluster.Place(0, request, at_zero);
  EXPECT_EQ(cluster.View(0).UsageOf(1).mig_held_starts, 0b1'0001);
  EXPECT_EQ(cluster.View(0).gpu_states[1].mig_free_slots(), 0) << "both held: none to give";
  EXPECT_EQ(cluster.used_milli(), 856);

  cluster.Remove(0, request, at_four);
  EXPECT_EQ(cluster.View(0).UsageOf(1).mig_held_starts, 0b0'0001) << "only the one removed is free again";
  EXPECT_EQ(cluster.View(0).gpu_states[1].mig_free_slots(), 0b1000);
  cluster.Remove(0, request, at_zero);
  EXPECT_EQ(cluster.View(0).UsageOf(1), GpuUsage{});
  EXPECT_EQ(cluster.used_milli(), 0);
}

}  // namespace
}  // namespace tessera::sim
