// A node's pool reaches the model (NodeState::pool, the tessera_pool_*
// metrics) from the first of the well-known pool labels it carries.
#include <gtest/gtest.h>

#include <string>

#include "k8s/sync/node_sink.h"

namespace tessera::k8s {
namespace {

struct PoolCase {
  std::string name;
  std::string labels;  // the node's metadata.labels, JSON
  std::string pool;
};

TEST(NodePool, TheFirstWellKnownPoolLabelNamesTheNodesPool) {
  const std::vector<PoolCase> cases = {
      {"Tessera's own label", R"({"tessera.io/node-pool":"train"})", "train"},
      {"Karpenter's", R"({"karpenter.sh/nodepool":"gpu-spot"})", "gpu-spot"},
      {"GKE's", R"({"cloud.google.com/gke-nodepool":"a100-pool"})", "a100-pool"},
      {"EKS's", R"({"eks.amazonaws.com/nodegroup":"ng-1"})", "ng-1"},
      {"AKS's", R"({"kubernetes.azure.com/agentpool":"gpupool"})", "gpupool"},
      {"Tessera's own wins over the cloud's", R"({"cloud.google.com/gke-nodepool":"x","tessera.io/node-pool":"y"})", "y"},
      {"no pool label, no pool", R"({"kubernetes.io/hostname":"n1"})", ""},
      {"no labels at all", "{}", ""},
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterModel model;
    NodeSink sink(model, nullptr);
    simdjson::dom::parser parser;
    const std::string json = R"({"metadata":{"name":"n1","labels":)" + c.labels +
                             R"(},"status":{"allocatable":{"nvidia.com/gpu":"2"}}})";
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(json).get(e), simdjson::SUCCESS);
    ASSERT_TRUE(sink.Upsert(e).ok());
    sink.Flush();
    const auto snapshot = model.Current();
    ASSERT_TRUE(snapshot->FindNode("n1").has_value());
    EXPECT_EQ(snapshot->node(*snapshot->FindNode("n1")).pool, c.pool);
  }
}

}  // namespace
}  // namespace tessera::k8s
