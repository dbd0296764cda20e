// The nodes a request names, joined with the cluster snapshot.
#include "extender/service/candidate_nodes.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Holding;
using testing::Inventory;

constexpr std::string_view kTwoGpus =
    R"([{"index":0,"model":"A100","memoryMiB":40960},{"index":1,"model":"A100","memoryMiB":40960}])";

std::vector<GpuState> States(const NodeView& view) { return {view.gpu_states.begin(), view.gpu_states.end()}; }

TEST(CandidateNodesTest, EveryFormJoinsTheGpusItReadsWithWhatTheSnapshotSaysPodsHold) {
  ClusterModel model;
  model.UpsertNode("n1", Inventory(2, "A100", 40960), absl::OkStatus());  // kTwoGpus
  model.UpsertPod(Holding("a", "n1", 1, 600));
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  const GpuState idle(0, MemoryMiB(40960), GpuUsage{});
  const GpuState held(1, MemoryMiB(40960),
                      GpuUsage{.guaranteed = MilliGpu(600), .limit = MilliGpu(600), .memory = MemoryMiB(0),
                               .memory_limit = MemoryMiB(0), .pods = 1});
  const GpuState held_unknown(1, MemoryMiB(40960), GpuUsage{});

  struct Case {
    std::string name;
    const k8s::ExtenderArgs* args;  // move-only: the views point into its text
    std::vector<std::vector<GpuState>> states;  // per node named
  };
  k8s::ExtenderArgs names;
  names.node_names = std::vector<std::string_view>{"n1", "unknown"};
  k8s::ExtenderArgs objects;
  objects.nodes.emplace();
  for (std::string_view name : {"n1", "unknown"}) {
    k8s::WireNode& node = objects.nodes->emplace_back();  // move-only
    node.name = name;
    node.inventory.inventory_annotation = kTwoGpus;
  }
  const std::vector<Case> cases = {
      {"names: the snapshot's own views, nothing for a node it does not know", &names, {{idle, held}, {}}},
      {"Node objects: their inventory, with the snapshot's usage where it knows the node",
       &objects,
       {{idle, held}, {idle, held_unknown}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CandidateNodes candidates(*c.args, *snapshot);
    ASSERT_EQ(candidates.size(), c.states.size());
    for (size_t i = 0; i < c.states.size(); ++i) {
      EXPECT_EQ(States(candidates.view(i)), c.states[i]) << "node " << i;
      EXPECT_EQ(candidates.view(i).gpu_states.size(), candidates.view(i).gpus.size()) << "node " << i;
    }
  }
}

// Issue 46: a node withheld for a pod whose GPUs the model cannot count is
// withheld however the request names it.
TEST(CandidateNodesTest, ANodeWithheldInTheSnapshotIsWithheldInEveryForm) {
  ClusterModel model;
  model.UpsertNode("n1", Inventory(2, "A100", 40960), absl::OkStatus());
  PodHolding unknown = Holding("a", "n1", 0, 0);
  unknown.assignment.gpus.clear();
  unknown.unknown_holding = "unreadable tessera.io/gpu-assignment";
  model.UpsertPod(std::move(unknown));
  const std::shared_ptr<const ClusterSnapshot> snapshot = model.Publish();
  k8s::ExtenderArgs names;
  names.node_names = std::vector<std::string_view>{"n1"};
  k8s::ExtenderArgs objects;
  objects.nodes.emplace();
  k8s::WireNode& node = objects.nodes->emplace_back();
  node.name = "n1";
  node.inventory.inventory_annotation = kTwoGpus;
  for (const k8s::ExtenderArgs* args : {&names, &objects}) {
    const CandidateNodes candidates(*args, *snapshot);
    ASSERT_EQ(candidates.size(), 1u);
    ASSERT_NE(candidates.view(0).gpus_withheld, nullptr) << (args == &names ? "names" : "Node objects");
  }
}

}  // namespace
}  // namespace tessera
