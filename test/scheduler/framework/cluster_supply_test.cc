#include "scheduler/framework/cluster_supply.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test/testing/builders.h"

namespace tessera {
namespace {

using testing::Node;

TEST(ClusterCpuTest, SumsTheCpuAndGpusOfTheGpuNodesThatReportTheirHost) {
  struct Case {
    std::string name;
    std::vector<Node> nodes;
    int64_t cpu;
    int64_t gpu;
  };
  std::vector<Case> cases;
  cases.push_back({"two GPU nodes", {}, 96000 + 64000, 12000});
  cases.back().nodes.push_back(Node("a").Gpus(8).Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(4).Host(64000, 64000));
  cases.push_back({"a CPU-only node's CPU is not where GPU pods can use it", {}, 96000, 8000});
  cases.back().nodes.push_back(Node("a").Gpus(8).Host(96000));
  cases.back().nodes.push_back(Node("c").Host(32000, 32000));
  cases.push_back({"a node without host resources counts neither its CPU nor its GPUs", {}, 96000, 8000});
  cases.back().nodes.push_back(Node("a").Gpus(8).Host(96000));
  cases.back().nodes.push_back(Node("d").Gpus(8));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TargetWorkload::CpuPerGpu sum;
    for (const Node& node : c.nodes) AddClusterCpu(node.View(), sum);
    EXPECT_EQ(sum.cpu, c.cpu);
    EXPECT_EQ(sum.gpu, c.gpu);
  }
}

TEST(ClusterCpuTest, CountsTheClustersGpusByModelWhateverTheirHost) {
  using ModelGpus = TargetWorkload::ModelGpus;
  struct Case {
    std::string name;
    std::vector<Node> nodes;
    std::vector<ModelGpus> models;
  };
  std::vector<Case> cases;
  cases.push_back({"nodes of one model add up", {}, {{"T4", 6}}});
  cases.back().nodes.push_back(Node("a").Gpus(2, "T4").Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(4, "T4"));
  cases.push_back({"each model once, in the order first seen", {}, {{"G2", 8}, {"T4", 2}}});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(2, "T4").Host(104000));
  cases.push_back({"a CPU-only node has none", {}, {{"G2", 8}}});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000));
  cases.back().nodes.push_back(Node("c").Host(32000, 32000));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSupplySum sum;
    for (const Node& node : c.nodes) sum.Add(node.View());
    EXPECT_EQ(std::move(sum).Take().gpu_models, c.models);
  }
}

TEST(ClusterCpuTest, CountsTheIdleNodesByShapeAndTheFreeOfEveryGpu) {
  using IdleNodes = TargetWorkload::IdleNodes;
  struct Case {
    std::string name;
    std::vector<Node> nodes;
    std::vector<IdleNodes> idle;
    int64_t free_milli;
  };
  std::vector<Case> cases;
  cases.push_back({"alike idle nodes are one group", {}, {{8, 96000, "G2", 2}}, 16000});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(8, "G2").Host(96000));
  cases.push_back(
      {"by GPU count, free CPU and model", {}, {{8, 96000, "G2", 1}, {8, 64000, "G2", 1}, {2, 96000, "T4", 1}}, 18000});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(8, "G2").Host(64000));
  cases.back().nodes.push_back(Node("c").Gpus(2, "T4").Host(96000));
  cases.push_back({"a share held breaks a node; its free GPU still counts", {}, {{8, 96000, "G2", 1}}, 15750});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000));
  cases.back().nodes.push_back(Node("b").Gpus(8, "G2").Host(96000).Hold(3, 250));
  cases.push_back({"a node without host resources is no idle node a kind's CPU can be judged by", {}, {}, 8000});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2"));
  cases.push_back({"an unhealthy GPU has nothing free, and its node is not idle", {}, {}, 7000});
  cases.back().nodes.push_back(Node("a").Gpus(8, "G2").Host(96000).Unhealthy(5));
  cases.push_back({"a CPU-only node has neither", {}, {}, 0});
  cases.back().nodes.push_back(Node("c").Host(32000, 32000));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSupplySum sum;
    for (const Node& node : c.nodes) sum.Add(node.View());
    const TargetWorkload::ClusterSupply supply = std::move(sum).Take();
    EXPECT_EQ(supply.idle_nodes, c.idle);
    EXPECT_EQ(supply.free_milli, c.free_milli);
  }
}

}  // namespace
}  // namespace tessera
