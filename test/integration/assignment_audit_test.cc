// The audit the control-plane tests and the end-to-end benchmark trust to say
// "nothing over-committed": it must see every way a GPU can be over-committed.
#include "test/testing/assignment_audit.h"

#include <gtest/gtest.h>

#include "test/testing/metrics_text.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// A pod bound to `node` holding `milli` and `mib` on GPU `gpu` ("" node: unbound; milli < 0: no assignment).
json BoundPod(std::string name, std::string node, int gpu, int milli, int mib, std::string assigned_node = "") {
  json pod = {{"metadata", {{"namespace", "e2e"}, {"name", name}, {"annotations", {{"tessera.io/gpu-fraction", "0.5"}}}}},
              {"spec", json::object()}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  if (milli >= 0) {
    const json assignment = {{"node", assigned_node.empty() ? node : assigned_node},
                             {"gpus", json::array({{{"index", gpu}, {"milli", milli}, {"memoryMiB", mib}}})}};
    pod["metadata"]["annotations"]["tessera.io/gpu-assignment"] = assignment.dump();
  }
  return pod;
}

const std::map<std::string, AuditedNode> kTwoNodes = {{"a", {.gpus = 2, .memory = MemoryMiB(1000)}},
                                                      {"b", {.gpus = 2, .memory = MemoryMiB(1000)}}};

struct AuditCase {
  std::string name;
  std::vector<json> pods;
  size_t problems;
  std::string problem_mentions;
};

class AuditTest : public ::testing::TestWithParam<AuditCase> {};

TEST_P(AuditTest, FindsWhatIsWrong) {
  const AssignmentAudit audit = AuditAssignments(GetParam().pods, kTwoNodes);
  ASSERT_EQ(audit.problems.size(), GetParam().problems) << ::testing::PrintToString(audit.problems);
  if (!GetParam().problem_mentions.empty()) {
    EXPECT_NE(audit.problems[0].find(GetParam().problem_mentions), std::string::npos) << audit.problems[0];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AuditTest,
    ::testing::Values(
        AuditCase{"TwoHalvesOfOneGpuAreFine", {BoundPod("p1", "a", 0, 500, 500), BoundPod("p2", "a", 0, 500, 500)}, 0, ""},
        AuditCase{"ThreeHalvesOfOneGpuAreOverCommitted",
                  {BoundPod("p1", "a", 0, 500, 100), BoundPod("p2", "a", 0, 500, 100), BoundPod("p3", "a", 0, 500, 100)},
                  1, "GPU 0 of a is over-committed: 1500 milli-GPU"},
        AuditCase{"MoreMemoryThanTheCardIsOverCommitted",
                  {BoundPod("p1", "b", 1, 100, 600), BoundPod("p2", "b", 1, 100, 600)}, 1, "1200 MiB"},
        AuditCase{"HalvesOfDifferentGpusAndNodesAreFine",
                  {BoundPod("p1", "a", 0, 700, 700), BoundPod("p2", "a", 1, 700, 700), BoundPod("p3", "b", 0, 700, 700)},
                  0, ""},
        AuditCase{"AGpuPodBoundWithoutAnAssignmentIsAProblem", {BoundPod("p1", "a", 0, -1, 0)}, 1, "no assignment"},
        AuditCase{"AnUnboundPodIsNotAudited", {BoundPod("p1", "", 0, -1, 0)}, 0, ""},
        AuditCase{"AnAssignmentNamingAnotherNodeIsAProblem", {BoundPod("p1", "a", 0, 500, 0, "b")}, 1, "names b"},
        AuditCase{"AGpuTheNodeLacksIsAProblem", {BoundPod("p1", "a", 7, 500, 0)}, 1, "holds GPU 7"},
        AuditCase{"AnUnknownNodeIsAProblem", {BoundPod("p1", "z", 0, 500, 0)}, 1, "unknown node"}),
    [](const auto& info) { return info.param.name; });

TEST(MetricsTextTest, ReadsOneVerbsHistogramAndEstimatesQuantilesFromItsBuckets) {
  const std::string text =
      "# TYPE tessera_http_request_duration_seconds histogram\n"
      "tessera_http_request_duration_seconds_bucket{verb=\"bind\",le=\"0.001\"} 0\n"
      "tessera_http_request_duration_seconds_bucket{verb=\"filter\",le=\"0.001\"} 90\n"
      "tessera_http_request_duration_seconds_bucket{verb=\"filter\",le=\"0.01\"} 99\n"
      "tessera_http_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 100\n"
      "tessera_http_request_duration_seconds_sum{verb=\"filter\"} 0.25\n"
      "tessera_http_request_duration_seconds_count{verb=\"filter\"} 100\n";
  const HistogramReading h = ReadHistogram(text, "tessera_http_request_duration_seconds", "verb=\"filter\"");
  EXPECT_EQ(h.count, 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 0.0025);
  EXPECT_DOUBLE_EQ(h.QuantileUpperBound(0.5), 0.001);
  EXPECT_DOUBLE_EQ(h.QuantileUpperBound(0.99), 0.01);
  EXPECT_EQ(h.QuantileUpperBound(1.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ReadHistogram(text, "tessera_http_request_duration_seconds", "verb=\"prioritize\"").count, 0u);
}

}  // namespace
}  // namespace tessera::testing
