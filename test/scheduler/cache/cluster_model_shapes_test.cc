// The extender's cluster model tells plugins the shapes of the GPU pods on
// each node, as the simulator does (gpu-clustering reads them).
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using testing::Holding;
using testing::Inventory;
using testing::Share;

TEST(ClusterModelShapesTest, APublishedNodeCountsItsGpuPodsByShape) {
  ClusterModel model;
  model.UpsertNode("n", Inventory(4, "T4", 0), absl::OkStatus());
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
