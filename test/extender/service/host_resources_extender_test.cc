// The extender with host CPU and memory known (the watch fills them): pods
// without a GPU request go through the profile with count 0, and every pod's
// request is weighed against what nodes have free.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

#include "extender/service/profile_request.h"
#include "test/testing/builders.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::Holding;
using testing::Inventory;
using testing::ReadFile;
using testing::Requesting;
using testing::ServiceFixture;

constexpr int64_t kCores = 1000;

HostResources Allocatable(int64_t cores) {
  return HostResources{.cpu_capacity = MilliCpu(cores * kCores), .memory_capacity = MemoryMiB(512 * 1024)};
}

// ExtenderArgs with NodeNames for a pod asking `cpu` (and a GPU share when `fraction` is set).
std::string Args(const std::string& cpu, const std::vector<std::string>& nodes, const std::string& fraction = "") {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "uid-p"}}},
              {"spec", {{"containers", json::array({{{"name", "main"},
                                                     {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}}};
  if (!fraction.empty()) pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  return json{{"Pod", pod}, {"NodeNames", nodes}}.dump();
}

std::map<std::string, int64_t> Scores(const ServiceFixture& f, const std::string& args) {
  absl::StatusOr<std::string> answer = f.service().Prioritize(args);
  EXPECT_TRUE(answer.ok()) << answer.status();
  std::map<std::string, int64_t> scores;
  for (const json& host : json::parse(*answer)) scores[host["Host"]] = host["Score"];
  return scores;
}

class HostResourcesExtenderTest : public ::testing::Test {
 protected:
  HostResourcesExtenderTest() : f_("", ReadFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml")) {}

  // "gpu": 8 idle A100s and 96 cores; "cpu": no GPU, 96 cores; with `host_known` false neither states its allocatable.
  void TwoNodes(bool host_known) {
    auto host = [&](int64_t cores) { return host_known ? std::optional(Allocatable(cores)) : std::nullopt; };
    f_.model().UpsertNode("gpu", Inventory(8), absl::OkStatus(), host(96));
    f_.model().UpsertNode("cpu", NodeInventory{}, absl::OkStatus(), host(96));
    f_.model().Publish();
  }

  // A running CPU-only pod `uid` on `node` that requested `cores`.
  void Running(const std::string& uid, const std::string& node, int64_t cores) {
    f_.model().UpsertPod(Requesting(Holding(uid, node, {}), cores * kCores));
  }

  ServiceFixture f_;
};

TEST_F(HostResourcesExtenderTest, ACpuOnlyPodIsSteeredAwayFromTheCpuThatGpusNeed) {
  TwoNodes(/*host_known=*/true);
  // 90 of the GPU node's 96 cores would leave its 8 GPUs 6 cores: stranded.
  const std::map<std::string, int64_t> scores = Scores(f_, Args("90", {"gpu", "cpu"}));
  EXPECT_GT(scores.at("cpu"), scores.at("gpu")) << "fgd: no GPU is stranded on the CPU-only node";
}

TEST_F(HostResourcesExtenderTest, ACpuOnlyPodsScoresAreTheProfilesWithCountZeroAndItsHostRequest) {
  TwoNodes(/*host_known=*/true);
  f_.model().UpsertNode("half", Inventory(8), absl::OkStatus(), Allocatable(96));
  f_.model().Publish();
  const std::vector<std::string> names = {"gpu", "cpu", "half"};
  const std::map<std::string, int64_t> scores = Scores(f_, Args("40", names));
  // The same profile run directly: the wire carries exactly its answer.
  const auto snapshot = f_.model().Current();
  std::vector<const NodeView*> views;
  for (const std::string& n : names) views.push_back(&snapshot->View(*snapshot->FindNode(n)));
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyText(ReadFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"), "p.yaml",
                     NewBuiltinRegistry());
  ASSERT_TRUE(profile.ok()) << profile.status();
  const PodGpuRequest cpu_only =
      ProfileRequest(std::nullopt, HostRequest{.cpu = MilliCpu(40 * kCores), .memory = MemoryMiB(1024)});
  EXPECT_EQ(cpu_only.count, 0);
  const std::vector<int64_t> direct = (*profile)->Score(CycleState(cpu_only), views, nullptr);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(scores.at(names[i]), direct[i]) << names[i];
}

TEST_F(HostResourcesExtenderTest, WithTheHostUnknownACpuOnlyPodGetsNoPreference) {
  TwoNodes(/*host_known=*/false);
  const std::map<std::string, int64_t> scores = Scores(f_, Args("90", {"gpu", "cpu"}));
  EXPECT_EQ(scores.at("cpu"), scores.at("gpu"));
}

TEST_F(HostResourcesExtenderTest, FilterChecksACpuOnlyPodsCpuWhereKnownAndPassesNodesTesseraDoesNotKnow) {
  TwoNodes(/*host_known=*/true);
  f_.model().UpsertNode("busy", NodeInventory{}, absl::OkStatus(), Allocatable(96));
  Running("running", "busy", 90);
  f_.model().Publish();
  absl::StatusOr<std::string> answer = f_.service().Filter(Args("100", {"gpu", "busy", "elsewhere"}));
  ASSERT_TRUE(answer.ok()) << answer.status();
  json result = json::parse(*answer);
  EXPECT_THAT(result["NodeNames"], ::testing::ElementsAre("elsewhere")) << *answer;
  EXPECT_EQ(result["FailedAndUnresolvableNodes"]["gpu"], "node has 96000 milli-CPU in all, pod needs 100000");

  answer = f_.service().Filter(Args("10", {"gpu", "busy", "cpu"}));
  ASSERT_TRUE(answer.ok()) << answer.status();
  result = json::parse(*answer);
  EXPECT_THAT(result["NodeNames"], ::testing::ElementsAre("gpu", "cpu")) << *answer;
  EXPECT_EQ(result["FailedNodes"]["busy"], "node has 6000 milli-CPU free, pod needs 10000");
}

TEST_F(HostResourcesExtenderTest, AGpuPodsFilterAndPrioritizeSeeItsCpuRequest) {
  TwoNodes(/*host_known=*/true);
  f_.model().UpsertNode("small", Inventory(8), absl::OkStatus(), Allocatable(8));
  f_.model().Publish();
  absl::StatusOr<std::string> answer = f_.service().Filter(Args("12", {"gpu", "small"}, "0.5"));
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json result = json::parse(*answer);
  EXPECT_THAT(result["NodeNames"], ::testing::ElementsAre("gpu"));
  EXPECT_THAT(result["FailedAndUnresolvableNodes"]["small"].get<std::string>(), HasSubstr("pod needs 12000"));
  // fgd weighs the CPU a GPU pod leaves: on "tight" (16 of 96 cores free)
  // 12 more cores strand its other GPUs; on "gpu" (96 free) nothing is stranded.
  f_.model().UpsertNode("tight", Inventory(8), absl::OkStatus(), Allocatable(96));
  Running("cpu-hog", "tight", 80);
  f_.model().Publish();
  const std::map<std::string, int64_t> scores = Scores(f_, Args("12", {"gpu", "tight"}, "0.5"));
  EXPECT_GT(scores.at("gpu"), scores.at("tight"));
}

TEST_F(HostResourcesExtenderTest, AnUnreadableCpuRequestFailsThePodOnceWithTheFieldNamed) {
  TwoNodes(/*host_known=*/true);
  absl::StatusOr<std::string> answer = f_.service().Filter(Args("two", {"gpu", "cpu"}));
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json result = json::parse(*answer);
  // The pod is at fault, not a node: one Error, no reason per node.
  EXPECT_THAT(result["Error"].get<std::string>(),
              HasSubstr(R"(pod has an unreadable CPU or memory request: ExtenderArgs.Pod.spec.containers[0].resources.requests.cpu="two")"));
  EXPECT_EQ(result["FailedAndUnresolvableNodes"], json::object());
  EXPECT_EQ(result["NodeNames"], json::array());
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(GpuShareAloneTest, ACpuOnlyPodPassesEveryNodeAndGetsNoGpuBasedPreference) {
  ServiceFixture f;  // gpu-share, binpack
  f.model().UpsertNode("busy-gpus", Inventory(2), absl::OkStatus(), Allocatable(32));
  f.model().UpsertNode("no-gpus", NodeInventory{}, absl::OkStatus(), Allocatable(32));
  f.model().UpsertNode("broken", NodeInventory{}, absl::InvalidArgumentError("bad inventory"), Allocatable(32));
  f.model().UpsertPod(Holding("s", "busy-gpus", 0, 900));
  f.model().Publish();
  const std::vector<std::string> names = {"busy-gpus", "no-gpus", "broken"};
  absl::StatusOr<std::string> answer = f.service().Filter(Args("1", names));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_THAT(json::parse(*answer)["NodeNames"], ::testing::ElementsAre("busy-gpus", "no-gpus", "broken"));
  // Every node scores the same: no preference (all are "the best", 10).
  for (const auto& [node, score] : Scores(f, Args("1", names))) EXPECT_EQ(score, kMaxWireScore) << node;
}

}  // namespace
}  // namespace tessera
