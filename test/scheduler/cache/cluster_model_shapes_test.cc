// The extender's cluster model tells plugins the shapes of the GPU pods on
// each node, as the simulator does (gpu-clustering reads them).
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/cache/cluster_model.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;

GpuShare Share(int32_t index, int64_t milli) {
  GpuShare s;
  s.index = index;
  s.guaranteed = s.limit = MilliGpu(milli);
  return s;
}

PodHolding Holding(std::string uid, std::string node, std::vector<GpuShare> shares) {
  PodHolding p;
  p.pod_key = absl::StrCat("ns/", uid);
  p.uid = std::move(uid);
  p.assignment.node = std::move(node);
  p.assignment.gpus = std::move(shares);
  return p;
}

TEST(ClusterModelShapesTest, APublishedNodeCountsItsGpuPodsByShape) {
  ClusterModel model;
  NodeInventory inventory;
  for (int32_t i = 0; i < 4; ++i) inventory.gpus.push_back(GpuDevice{.index = i, .uuid = {}, .model = "T4", .memory = MemoryMiB(0), .numa = -1});
  model.UpsertNode("n", inventory, absl::OkStatus());
  model.UpsertPod(Holding("a", "n", {Share(0, 250)}));
  model.UpsertPod(Holding("b", "n", {Share(0, 500)}));
  model.UpsertPod(Holding("c", "n", {Share(1, 1000), Share(2, 1000)}));
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  const NodeView& view = snapshot->View(*snapshot->FindNode("n"));
  EXPECT_THAT(view.pod_shapes, ElementsAre(GpuPodShape{.gpus = 1, .whole_gpu = false, .pods = 2},
                                           GpuPodShape{.gpus = 2, .whole_gpu = true, .pods = 1}));
  EXPECT_EQ(view.host, nullptr) << "no allocatable given: the host is unknown";
}

}  // namespace
}  // namespace tessera
