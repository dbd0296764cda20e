#include "scheduler/framework/cluster_cpu.h"

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

}  // namespace
}  // namespace tessera
