// Nodes whose MIG instances only GPU Feature Discovery's labels tell: a real
// kube-scheduler filter request (full v1.Node objects) with GFD's labels put
// on its nodes, and the same nodes from the cluster file for NodeNames.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::FixturePath;
using testing::ReadDataFile;
using testing::ServiceFixture;

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
  - name: mig-partition
)";

// What GFD writes on a node under nvidia.com/mig.strategy=mixed: two
// A100-80GB, both split (allocatable nvidia.com/gpu 0: no whole GPU left),
// seven 1g.10gb instances in all, and the per-profile attributes.
void LabelMixedMigNode(json& node) {
  json& labels = node["metadata"]["labels"];
  labels["nvidia.com/gpu.count"] = "2";
  labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  labels["nvidia.com/gpu.memory"] = "81920";
  labels["nvidia.com/gpu.replicas"] = "0";
  labels["nvidia.com/mig.capable"] = "true";
  labels["nvidia.com/mig.strategy"] = "mixed";
  labels["nvidia.com/mig-1g.10gb.count"] = "7";
  labels["nvidia.com/mig-1g.10gb.memory"] = "9728";
  labels["nvidia.com/mig-1g.10gb.multiprocessors"] = "14";
  labels["nvidia.com/mig-1g.10gb.product"] = "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb";
  labels["nvidia.com/mig-1g.10gb.replicas"] = "1";
  labels["nvidia.com/mig-1g.10gb.slices.ci"] = "1";
  labels["nvidia.com/mig-1g.10gb.slices.gi"] = "1";
  node["status"]["allocatable"]["nvidia.com/gpu"] = "0";
  node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7";
}

// GFD's labels of eight T4s, no MIG.
void LabelT4Node(json& node) {
  json& labels = node["metadata"]["labels"];
  labels["nvidia.com/gpu.count"] = "8";
  labels["nvidia.com/gpu.product"] = "Tesla-T4";
  labels["nvidia.com/gpu.memory"] = "15360";
  labels["nvidia.com/mig.capable"] = "false";
  labels["nvidia.com/mig.strategy"] = "mixed";
}

// The recorded request with gpu-node-1 split by GFD's labels, gpu-node-2
// T4s, and the pod asking by `annotations`.
absl::StatusOr<std::string> FilterRequest(const json& annotations) {
  absl::StatusOr<std::string> recorded = ReadDataFile(FixturePath("filter-request-fullnodes.json"));
  if (!recorded.ok()) return recorded.status();
  json request = json::parse(*recorded);
  for (json& node : request["Nodes"]["items"]) {
    if (node["metadata"]["name"] == "gpu-node-1") LabelMixedMigNode(node);
    if (node["metadata"]["name"] == "gpu-node-2") LabelT4Node(node);
  }
  request["Pod"]["metadata"]["annotations"] = annotations;
  return request.dump();
}

// The names of the nodes an answer lets through, and why each other failed.
struct Verdicts {
  std::vector<std::string> passed;
  std::map<std::string, std::string> failed;  // FailedNodes and FailedAndUnresolvableNodes
};

Verdicts Read(const std::string& answer) {
  const json got = json::parse(answer);
  EXPECT_TRUE(!got.contains("Error") || got["Error"] == "") << got.dump();
  Verdicts v;
  if (got.contains("Nodes") && got["Nodes"].is_object()) {
    for (const json& node : got["Nodes"]["items"]) v.passed.push_back(node["metadata"]["name"]);
  } else if (got.contains("NodeNames") && got["NodeNames"].is_array()) {
    for (const json& name : got["NodeNames"]) v.passed.push_back(name);
  }
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    if (!got.contains(key) || !got[key].is_object()) continue;
    for (const auto& [name, reason] : got[key].items()) v.failed[name] = reason;
  }
  return v;
}

TEST(GfdMigLabels, AMigPodPlacesOnTheNodeGfdLabelsSplitAndASharePodDoesNot) {
  ServiceFixture fixture("", kPolicy);
  const auto filter = [&](const json& annotations) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::string> request = FilterRequest(annotations);
    if (!request.ok()) return request.status();
    return fixture.service().Filter(*request);
  };
  absl::StatusOr<std::string> mig = filter({{"tessera.io/mig-profile", "1g.10gb"}});
  ASSERT_TRUE(mig.ok()) << mig.status();
  Verdicts for_mig = Read(*mig);
  EXPECT_EQ(for_mig.passed, (std::vector<std::string>{"gpu-node-1"}));
  EXPECT_THAT(for_mig.failed["gpu-node-2"], HasSubstr("has no GPU in MIG mode"));

  absl::StatusOr<std::string> share = filter({{"tessera.io/gpu-fraction", "0.5"}});
  ASSERT_TRUE(share.ok()) << share.status();
  Verdicts for_share = Read(*share);
  EXPECT_THAT(for_share.passed, ::testing::Contains("gpu-node-2"));
  EXPECT_THAT(for_share.passed, ::testing::Not(::testing::Contains("gpu-node-1")));
  EXPECT_THAT(for_share.failed["gpu-node-1"], HasSubstr("2 GPUs are in MIG mode"))
      << "both GPUs are split: no share lands there";

  // A profile the labels do not count is not there: re-partitioning only.
  absl::StatusOr<std::string> big = filter({{"tessera.io/mig-profile", "3g.40gb"}});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_THAT(Read(*big).failed["gpu-node-1"], HasSubstr("no 3g.40gb instance exists"));
}

// The same labels from the cluster file (as the watch keeps them), asked by
// node name; a node whose model has no MIG table keeps its GPUs from shares
// and MIG pods alike, and the reason is among the node's problems.
TEST(GfdMigLabels, TheClusterFilesLabelsGiveTheSameNodesByNameAndAnUnknownModelSaysWhy) {
  ServiceFixture fixture(R"(nodes:
  - name: split
    labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.memory: "81559",
             nvidia.com/mig.strategy: mixed, nvidia.com/mig-3g.40gb.count: "2"}
  - name: a30
    labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.product: NVIDIA-A30, nvidia.com/gpu.memory: "24576",
             nvidia.com/mig.strategy: mixed, nvidia.com/mig-2g.12gb.count: "2"}
  - name: single
    labels: {nvidia.com/gpu.count: "7", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB-MIG-1g.10gb,
             nvidia.com/gpu.memory: "9728", nvidia.com/mig.strategy: single}
)",
                         kPolicy);
  const auto filter = [&](const std::string& annotation, const std::string& value) {
    const json body = {{"Pod", {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u"},
                                              {"annotations", {{annotation, value}}}}},
                                {"spec", json::object()}}},
                       {"Nodes", nullptr},
                       {"NodeNames", {"split", "a30", "single"}}};
    absl::StatusOr<std::string> answer = fixture.service().Filter(body.dump());
    EXPECT_TRUE(answer.ok()) << answer.status();
    return Read(answer.ok() ? *answer : "{}");
  };
  EXPECT_EQ(filter("tessera.io/mig-profile", "3g.40gb").passed, (std::vector<std::string>{"split"}));
  EXPECT_EQ(filter("tessera.io/mig-profile", "1g.10gb").passed, (std::vector<std::string>{"single"}));
  Verdicts a30 = filter("tessera.io/mig-profile", "2g.12gb");
  EXPECT_TRUE(a30.passed.empty());
  EXPECT_THAT(a30.failed["a30"], HasSubstr("in MIG mode but its inventory does not list its instances"));
  EXPECT_TRUE(filter("tessera.io/gpu-fraction", "0.5").passed.empty()) << "every GPU is split";

  const auto snapshot = fixture.model().Current();
  const NodeState& a30_state = snapshot->node(*snapshot->FindNode("a30"));
  EXPECT_THAT(a30_state.problems, ::testing::Contains(HasSubstr("NVIDIA-A30 is a model Tessera has no MIG table for")));
}

}  // namespace
}  // namespace tessera
