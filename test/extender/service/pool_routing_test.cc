// Pools by task type through the service as kube-scheduler calls it: the
// recorded v1.26 requests with the pod's tessera.io/task-type label set, on a
// cluster of two node pools whose policies differ (binpack for training,
// spread for inference), and nodes of no pool.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "extender/service/debug_state.h"
#include "test/testing/data_files.h"
#include "test/testing/policy_document.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string NodeYaml(const std::string& name, const std::string& pool) {
  std::string out = absl::StrCat("  - name: ", name, "\n    annotations: {tessera.io/gpu-inventory: ", testing::QuotedFourA100Inventory(), "}\n");
  if (!pool.empty()) absl::StrAppend(&out, "    labels: {tessera.io/node-pool: ", pool, "}\n");
  return out;
}

// train-1 and infer-1 each have half of GPU 0 held; their pool mates are idle;
// spare-1 is in no pool, cpu-1 in a pool no policy names.
std::string ClusterYaml() {
  std::string out = "nodes:\n";
  for (const auto& [name, pool] : std::vector<std::pair<std::string, std::string>>{
           {"train-1", "gpu-training"}, {"train-2", "gpu-training"}, {"infer-1", "gpu-inference"},
           {"infer-2", "gpu-inference"}, {"spare-1", ""}, {"cpu-1", "general"}}) {
    out += NodeYaml(name, pool);
  }
  out += "pods:\n";
  for (const std::string node : {"train-1", "infer-1"}) {
    absl::StrAppend(&out, "  - name: held-", node, "\n    annotations: {tessera.io/gpu-assignment: '{\"node\":\"", node,
                    "\",\"gpus\":[{\"index\":0,\"milli\":500}]}'}\n");
  }
  return out;
}

// The default places unrouted pods by spread, so that every answer shows whose policy decided it.
// Filter passes every node a pod's route admits (no shortlist), so that its
// answers show routing alone; filter_shortlist_test.cc has a routed shortlist.
constexpr std::string_view kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
shortlist: {maxNodes: 0}
plugins:
  - name: gpu-share
    args: {nodeStrategy: spread, gpuStrategy: spread}
pools:
  - name: gpu-training
    taskTypes: [training, fine-tuning]
    exclusive: true
    plugins:
      - name: gpu-share
        args: {nodeStrategy: binpack, gpuStrategy: binpack}
  - name: gpu-inference
    taskTypes: [inference]
    plugins:
      - name: gpu-share
        args: {nodeStrategy: spread, gpuStrategy: spread}
)";

const std::vector<std::string> kAllNodes = {"train-1", "train-2", "infer-1", "infer-2", "spare-1", "cpu-1"};

class PoolRoutingTest : public ::testing::Test {
 protected:
  // The recorded filter request's pod (kube-scheduler v1.26), asking for a
  // quarter GPU, with `task_type` as its label (none when empty).
  static json RecordedPod(const std::string& task_type) { return testing::RecordedFilterPod("", "0.25", task_type); }
  json Filter(const std::string& task_type, const std::vector<std::string>& nodes = kAllNodes) {
    absl::StatusOr<std::string> answer =
        fixture_.service().Filter(json{{"Pod", RecordedPod(task_type)}, {"NodeNames", nodes}}.dump());
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? json::parse(*answer) : json();
  }
  // Prioritize's scores by node name.
  std::map<std::string, int64_t> Prioritize(const std::string& task_type, const std::vector<std::string>& nodes) {
    absl::StatusOr<std::string> answer =
        fixture_.service().Prioritize(json{{"Pod", RecordedPod(task_type)}, {"NodeNames", nodes}}.dump());
    EXPECT_TRUE(answer.ok()) << answer.status();
    std::map<std::string, int64_t> scores;
    if (!answer.ok()) return scores;
    for (const json& entry : json::parse(*answer)) scores[entry["Host"]] = entry["Score"];
    return scores;
  }
  double Rejections(const std::string& reason) {
    return fixture_.metrics()
        .Counter("tessera_filter_rejections_total", "Nodes rejected by filter, by reason.", {{"reason", reason}})
        .Value();
  }

  testing::ServiceFixture fixture_{ClusterYaml(), kPolicy};
};

TEST_F(PoolRoutingTest, ATrainingPodPassesOnlyTheTrainingPoolsNodesAndTheOthersSayWhy) {
  const json answer = Filter("training");
  EXPECT_THAT(answer["NodeNames"], UnorderedElementsAre("train-1", "train-2")) << answer.dump();
  const json& never = answer["FailedAndUnresolvableNodes"];
  ASSERT_EQ(never.size(), 4u) << answer.dump();
  EXPECT_EQ(never["infer-1"],
            "pods of task type training run only in node pool gpu-training; this node is in node pool "
            "gpu-inference");
  EXPECT_EQ(never["spare-1"],
            "pods of task type training run only in node pool gpu-training; this node is in no node pool");
  EXPECT_EQ(never["cpu-1"],
            "pods of task type training run only in node pool gpu-training; this node is in node pool "
            "general");
  EXPECT_TRUE(answer["FailedNodes"].is_null() || answer["FailedNodes"].empty()) << "not a 'not now': no preemption";
  EXPECT_EQ(Rejections("node_pool_mismatch"), 4);
}

TEST_F(PoolRoutingTest, EachPoolsOwnPolicyRanksItsNodes) {
  // Same holdings in both pools (half of GPU 0 held on the first node):
  // training's binpack prefers the partly used node, inference's spread the idle one.
  EXPECT_THAT(Prioritize("training", {"train-1", "train-2"}),
              ElementsAre(std::pair<const std::string, int64_t>("train-1", 10),
                          std::pair<const std::string, int64_t>("train-2", 1)));
  EXPECT_THAT(Prioritize("inference", {"infer-1", "infer-2"}),
              ElementsAre(std::pair<const std::string, int64_t>("infer-1", 1),
                          std::pair<const std::string, int64_t>("infer-2", 10)));
  EXPECT_THAT(Prioritize("fine-tuning", {"train-1", "train-2"}),
              ElementsAre(std::pair<const std::string, int64_t>("train-1", 10),
                          std::pair<const std::string, int64_t>("train-2", 1)))
      << "every task type a pool lists gets its policy";
}

TEST_F(PoolRoutingTest, PrioritizeScoresNodesOutsideThePodsPoolZeroAndLeavesThemOutOfTheNormalisation) {
  // kube-scheduler sends only what filter passed; were it to send more, the
  // training pool's ranking must not change.
  const std::map<std::string, int64_t> scores = Prioritize("training", kAllNodes);
  EXPECT_EQ(scores.at("train-1"), 10);
  EXPECT_EQ(scores.at("train-2"), 1);
  for (const std::string node : {"infer-1", "infer-2", "spare-1", "cpu-1"}) EXPECT_EQ(scores.at(node), 0) << node;
}

TEST_F(PoolRoutingTest, APodOfNoTaskTypeUsesTheDefaultPolicyEverywhereButAnExclusivePool) {
  const json answer = Filter("");
  EXPECT_THAT(answer["NodeNames"], UnorderedElementsAre("infer-1", "infer-2", "spare-1", "cpu-1")) << answer.dump();
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"]["train-2"],
            "node pool gpu-training is reserved for task types training, fine-tuning; pod has no task type");
  EXPECT_EQ(Rejections("node_pool_reserved"), 2);
  // The default's spread: the idle nodes first.
  const std::map<std::string, int64_t> scores = Prioritize("", {"infer-1", "infer-2", "spare-1"});
  EXPECT_LT(scores.at("infer-1"), scores.at("infer-2"));
  EXPECT_EQ(scores.at("spare-1"), 10);
}

TEST_F(PoolRoutingTest, ATaskTypeNoPoolListsIsPlacedAsAPodWithoutOne) {
  const json answer = Filter("batch");
  EXPECT_THAT(answer["NodeNames"], UnorderedElementsAre("infer-1", "infer-2", "spare-1", "cpu-1")) << answer.dump();
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"]["train-1"],
            "node pool gpu-training is reserved for task types training, fine-tuning; pod's task type is "
            "batch");
}

TEST_F(PoolRoutingTest, ATaskTypeThatIsNoLabelValueFailsThePodOnceWithTheReason) {
  const json answer = Filter("-training");
  EXPECT_EQ(answer["Error"],
            "pod's label tessera.io/task-type is not a valid label value (it must begin and end with a letter or "
            "digit): no node pool can be chosen for it");
  EXPECT_TRUE(answer["NodeNames"].empty()) << answer.dump();
  EXPECT_EQ(Rejections("invalid_task_type"), 6);
  for (const auto& [node, score] : Prioritize("-training", {"train-1", "infer-2"})) EXPECT_EQ(score, 0) << node;
}

TEST_F(PoolRoutingTest, FullNodeObjectsAreRoutedByTheirOwnPoolLabels) {
  // nodeCacheCapable=false: the recorded request's Node objects, labelled here.
  json request = json::parse(testing::ReadFile(testing::FixturePath("filter-request-fullnodes.json")));
  request["Pod"] = RecordedPod("inference");
  const std::vector<std::string> pools = {"gpu-training", "gpu-inference", ""};
  for (size_t i = 0; i < request["Nodes"]["items"].size(); ++i) {
    json& node = request["Nodes"]["items"][i];
    node["metadata"]["annotations"]["tessera.io/gpu-inventory"] = std::string(testing::kFourA100Inventory);
    if (!pools[i].empty()) node["metadata"]["labels"]["tessera.io/node-pool"] = pools[i];
  }
  absl::StatusOr<std::string> body = fixture_.service().Filter(request.dump());
  ASSERT_TRUE(body.ok()) << body.status();
  const json answer = json::parse(*body);
  ASSERT_EQ(answer["Nodes"]["items"].size(), 1u) << answer.dump();
  EXPECT_EQ(answer["Nodes"]["items"][0]["metadata"]["name"], "gpu-node-2");
  EXPECT_THAT(answer["FailedAndUnresolvableNodes"]["gpu-node-1"].get<std::string>(),
              HasSubstr("this node is in node pool gpu-training"));
  EXPECT_THAT(answer["FailedAndUnresolvableNodes"]["gpu-node-3"].get<std::string>(),
              HasSubstr("this node is in no node pool"));
}

TEST_F(PoolRoutingTest, ThePreemptVerbDropsNodesOutsideThePodsPool) {
  const json args = {{"Pod", RecordedPod("training")},
                     {"NodeNameToMetaVictims",
                      {{"train-1", {{"Pods", {{{"UID", "held-train-1"}}}}, {"NumPDBViolations", 0}}},
                       {"infer-1", {{"Pods", {{{"UID", "held-infer-1"}}}}, {"NumPDBViolations", 0}}}}}};
  absl::StatusOr<std::string> answer = fixture_.service().Preempt(args.dump());
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json nodes = json::parse(*answer)["NodeNameToMetaVictims"];
  EXPECT_TRUE(nodes.contains("train-1")) << nodes.dump();
  EXPECT_FALSE(nodes.contains("infer-1")) << "evicting in another pool places nothing";
}

TEST_F(PoolRoutingTest, DebugShowsWhichTaskTypesGoToWhichPoolWithEachPoolsPluginsAndRoom) {
  absl::StatusOr<LoadedPolicy> policy = testing::LoadWithBuiltins(kPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::shared_ptr<const ClusterSnapshot> snapshot = fixture_.model().Current();
  DebugInputs in;
  in.snapshot = snapshot.get();
  in.profiles = policy->profiles.get();
  const json pools = json::parse(RenderDebugState(in))["pools"];
  EXPECT_EQ(pools["defaultPlugins"], json::array({"gpu-share"}));
  ASSERT_EQ(pools["routes"].size(), 2u) << pools.dump();
  EXPECT_EQ(pools["routes"][0], (json{{"pool", "gpu-training"},
                                      {"taskTypes", {"training", "fine-tuning"}},
                                      {"exclusive", true},
                                      {"plugins", {"gpu-share"}},
                                      {"nodes", 2},
                                      {"gpuMilli", {{"capacity", 8000}, {"allocated", 500}}}}));
  EXPECT_EQ(pools["routes"][1]["pool"], "gpu-inference");
  EXPECT_EQ(pools["routes"][1]["gpuMilli"]["allocated"], 500);

  const std::shared_ptr<const ProfileSet> no_pools = ProfileSet::Single(policy->profile);
  in.profiles = no_pools.get();
  EXPECT_FALSE(json::parse(RenderDebugState(in)).contains("pools")) << "no pools, no entry";
}

TEST_F(PoolRoutingTest, PodsOfTwoPoolsKeepTheirOwnMemoisedAnswers) {
  const auto counted = [this](const std::string& answer) {
    return fixture_.metrics()
        .Counter("tessera_prioritize_nodes_total",
                 "Nodes prioritize scored through the score memo: computed, or answered from the memo.",
                 {{"answer", answer}})
        .Value();
  };
  (void)Prioritize("training", {"train-1", "train-2"});
  (void)Prioritize("inference", {"infer-1", "infer-2"});
  EXPECT_EQ(counted("computed"), 4);
  (void)Prioritize("training", {"train-1", "train-2"});
  (void)Prioritize("inference", {"infer-1", "infer-2"});
  EXPECT_EQ(counted("computed"), 4) << "alternating pools does not wipe the other pool's memo";
  EXPECT_EQ(counted("memo"), 4);
}

}  // namespace
}  // namespace tessera
