// Filter passes on only the nodes the policy ranks best (the shortlist):
// ShortlistBest's choice, then the service answering the recorded v1.26
// filter request, with the pod's share and uid set here.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "extender/service/filter_shortlist.h"
#include "test/testing/data_files.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsSubsetOf;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

TEST(ShortlistBestTest, KeepsTheBestScoredNodesInRequestOrder) {
  struct Case {
    const char* name;
    std::vector<uint32_t> passed;
    std::vector<int64_t> scores;
    size_t max_nodes;
    uint64_t salt;
    std::vector<uint32_t> kept;
  };
  const Case cases[] = {
      {"a single best node is kept alone", {0, 2, 5, 7}, {3, 10, 7, 1}, 4, 0, {2}},
      {"ties at the top within the cap are all kept", {0, 2, 5, 7}, {10, 4, 10, 10}, 4, 0, {0, 5, 7}},
      {"more ties than the cap: a run of them from where the salt points", {0, 1, 2, 3, 4}, {9, 9, 9, 9, 9}, 2, 1,
       {1, 2}},
      {"a run that wraps round is still given in request order", {0, 1, 2, 3, 4}, {9, 9, 9, 9, 9}, 3, 3, {0, 3, 4}},
      {"the salt counts among the ties only", {0, 1, 2, 3, 4}, {10, 1, 10, 1, 10}, 1, 2, {4}},
      {"a cap of one keeps one node", {3, 4}, {10, 10}, 1, 0, {3}},
      {"a cap of zero keeps every node that fits", {0, 1, 2}, {10, 3, 1}, 0, 7, {0, 1, 2}},
      {"no node fits, none is kept", {}, {}, 4, 0, {}},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ShortlistBest(c.passed, c.scores, c.max_nodes, c.salt), ElementsAreArray(c.kept)) << c.name;
  }
}

TEST(ShortlistBestTest, EveryTieGetsItsTurnAsTheSaltVaries) {
  const std::vector<uint32_t> passed = {0, 1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> scores(passed.size(), 10);
  std::set<uint32_t> seen;
  for (uint64_t salt = 0; salt < passed.size(); ++salt) {
    const std::vector<uint32_t> kept = ShortlistBest(passed, scores, 2, salt);
    EXPECT_THAT(kept, SizeIs(2));
    seen.insert(kept.begin(), kept.end());
  }
  EXPECT_THAT(seen, SizeIs(passed.size()));
}

// Nodes n1..n6; `held` gives, per node, the milli-GPU pods hold on GPU 0
// (4000 fills its four GPUs).
std::string ClusterYaml(const std::map<std::string, int>& held, const std::map<std::string, std::string>& pools = {}) {
  std::string out = "nodes:\n";
  for (int i = 1; i <= 6; ++i) {
    const std::string name = absl::StrCat("n", i);
    absl::StrAppend(&out, "  - name: ", name, "\n    annotations: {tessera.io/gpu-inventory: ", testing::QuotedFourA100Inventory(), "}\n");
    if (pools.count(name) > 0) absl::StrAppend(&out, "    labels: {tessera.io/node-pool: ", pools.at(name), "}\n");
  }
  out += "pods:\n";
  for (const auto& [node, milli] : held) {
    std::string gpus;
    for (int g = 0, left = milli; left > 0; ++g, left -= 1000) {
      absl::StrAppend(&gpus, g > 0 ? "," : "", "{\"index\":", g, ",\"milli\":", std::min(left, 1000), "}");
    }
    absl::StrAppend(&out, "  - name: held-", node, "\n    annotations: {tessera.io/gpu-assignment: '{\"node\":\"", node,
                    "\",\"gpus\":[", gpus, "]}'}\n");
  }
  return out;
}

std::string BinpackPolicy(const std::string& shortlist) {
  return absl::StrCat(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\n", shortlist,
      "plugins:\n  - name: gpu-share\n    args: {nodeStrategy: binpack, gpuStrategy: binpack}\n");
}

const std::vector<std::string> kSixNodes = {"n1", "n2", "n3", "n4", "n5", "n6"};

json Filter(const testing::ServiceFixture& fixture, const json& pod, const std::vector<std::string>& nodes = kSixNodes) {
  absl::StatusOr<std::string> answer = fixture.service().Filter(json{{"Pod", pod}, {"NodeNames", nodes}}.dump());
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? json::parse(*answer) : json();
}

double Dropped(testing::ServiceFixture& fixture) {
  return fixture.metrics()
      .Counter("tessera_filter_shortlist_dropped_nodes_total",
               "Nodes that fit but filter left out: not among the best-ranked few the policy's shortlist passes on.")
      .Value();
}

TEST(FilterShortlistTest, APodIsPassedOnOnlyToTheNodeThePolicyRanksBest) {
  testing::ServiceFixture fixture(ClusterYaml({{"n2", 500}}), BinpackPolicy(""));
  const json answer = Filter(fixture, testing::RecordedFilterPod("uid-1", "0.25"));
  EXPECT_THAT(answer["NodeNames"], ElementsAre("n2")) << answer.dump();
  EXPECT_TRUE(answer["FailedNodes"].is_null() || answer["FailedNodes"].empty())
      << "the nodes left out fit: they are no failures, and preemption must not think so" << answer.dump();
  EXPECT_EQ(Dropped(fixture), 5);
}

TEST(FilterShortlistTest, NodesThatDoNotFitAreStillNamedWithTheirReason) {
  testing::ServiceFixture fixture(ClusterYaml({{"n2", 500}, {"n6", 4000}}), BinpackPolicy(""));
  const json answer = Filter(fixture, testing::RecordedFilterPod("uid-1", "0.25"));
  EXPECT_THAT(answer["NodeNames"], ElementsAre("n2")) << answer.dump();
  ASSERT_TRUE(answer["FailedNodes"].contains("n6")) << answer.dump();
  EXPECT_EQ(answer["FailedNodes"].size(), 1u) << answer.dump();
}

TEST(FilterShortlistTest, EquallyGoodNodesArePassedOnAtMostMaxNodesAtATimeAndEachGetsItsTurn) {
  testing::ServiceFixture fixture(ClusterYaml({}), BinpackPolicy("shortlist: {maxNodes: 2}\n"));
  std::set<std::string> seen;
  for (int pod = 0; pod < 40; ++pod) {
    const json answer = Filter(fixture, testing::RecordedFilterPod(absl::StrCat("uid-", pod), "0.25"));
    ASSERT_THAT(answer["NodeNames"], SizeIs(2)) << answer.dump();
    const std::vector<std::string> names = answer["NodeNames"];
    EXPECT_NE(names[0], names[1]);
    EXPECT_THAT(names, IsSubsetOf(kSixNodes));
    seen.insert(names.begin(), names.end());
  }
  EXPECT_THAT(seen, SizeIs(6)) << "pods spread over idle nodes, as kube-scheduler's random pick among its best would";
  // The same pod asks the same nodes again while the cluster is unchanged.
  EXPECT_EQ(Filter(fixture, testing::RecordedFilterPod("uid-7", "0.25"))["NodeNames"],
            Filter(fixture, testing::RecordedFilterPod("uid-7", "0.25"))["NodeNames"]);
}

TEST(FilterShortlistTest, MaxNodesZeroPassesEveryNodeThatFits) {
  testing::ServiceFixture fixture(ClusterYaml({{"n2", 500}, {"n6", 4000}}), BinpackPolicy("shortlist: {maxNodes: 0}\n"));
  const json answer = Filter(fixture, testing::RecordedFilterPod("uid-1", "0.25"));
  EXPECT_THAT(answer["NodeNames"], ElementsAre("n1", "n2", "n3", "n4", "n5")) << answer.dump();
  EXPECT_EQ(Dropped(fixture), 0);
}

TEST(FilterShortlistTest, APodWithoutAGpuRequestGetsEveryNodeThatFits) {
  // Tessera's preference among nodes for it is mild; kube-scheduler's own
  // score plugins weigh in on all of them.
  testing::ServiceFixture fixture(ClusterYaml({{"n2", 500}}), BinpackPolicy(""));
  const json answer = Filter(fixture, testing::RecordedFilterPod("uid-1", ""));
  EXPECT_THAT(answer["NodeNames"], ElementsAreArray(kSixNodes)) << answer.dump();
}

TEST(FilterShortlistTest, ARoutedPodsShortlistIsRankedByItsPoolsPolicy) {
  // n1, n2 train (binpack), n3, n4 infer (spread); half a GPU held on n1 and n3.
  const std::string policy =
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nshortlist: {maxNodes: 1}\n"
      "plugins:\n  - name: gpu-share\n"
      "pools:\n"
      "  - name: train\n    taskTypes: [training]\n    plugins:\n      - name: gpu-share\n"
      "        args: {nodeStrategy: binpack, gpuStrategy: binpack}\n"
      "  - name: infer\n    taskTypes: [inference]\n    plugins:\n      - name: gpu-share\n"
      "        args: {nodeStrategy: spread, gpuStrategy: spread}\n";
  testing::ServiceFixture fixture(
      ClusterYaml({{"n1", 500}, {"n3", 500}}, {{"n1", "train"}, {"n2", "train"}, {"n3", "infer"}, {"n4", "infer"}}),
      policy);
  EXPECT_THAT(Filter(fixture, testing::RecordedFilterPod("uid-t", "0.25", "training"))["NodeNames"], ElementsAre("n1"));
  EXPECT_THAT(Filter(fixture, testing::RecordedFilterPod("uid-i", "0.25", "inference"))["NodeNames"], ElementsAre("n4"));
}

TEST(FilterShortlistTest, FullNodeObjectsAreShortlistedTooAndAnsweredAsNodes) {
  // nodeCacheCapable=false: the recorded request's three Node objects, each
  // with an inventory; the snapshot holds half a GPU on gpu-node-2.
  testing::ServiceFixture fixture(
      "nodes:\n  - name: gpu-node-2\n    annotations: {tessera.io/gpu-inventory: " + testing::QuotedFourA100Inventory() +
          "}\npods:\n  - name: held\n    annotations: {tessera.io/gpu-assignment: "
          "'{\"node\":\"gpu-node-2\",\"gpus\":[{\"index\":0,\"milli\":500}]}'}\n",
      BinpackPolicy(""));
  json request = json::parse(testing::ReadFile(testing::FixturePath("filter-request-fullnodes.json")));
  request["Pod"] = testing::RecordedFilterPod("uid-1", "0.25");
  for (json& node : request["Nodes"]["items"]) {
    node["metadata"]["annotations"]["tessera.io/gpu-inventory"] = std::string(testing::kFourA100Inventory);
  }
  absl::StatusOr<std::string> body = fixture.service().Filter(request.dump());
  ASSERT_TRUE(body.ok()) << body.status();
  const json answer = json::parse(*body);
  ASSERT_EQ(answer["Nodes"]["items"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["Nodes"]["items"][0]["metadata"]["name"], "gpu-node-2");
}

}  // namespace
}  // namespace tessera
