// Filter's tenant quotas and the preempt verb, through the service as
// kube-scheduler calls it: recorded requests, and requests shaped like them.
#include <string>
#include <vector>

#include <gmock/gmock.h>

#include "absl/strings/str_cat.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/testing/builders.h"
#include "test/testing/data_files.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A pod as kube-scheduler sends it: namespace, priority, tenant label, GPU request.
json PodJson(const std::string& ns, int priority, const std::string& fraction, const std::string& tenant = "") {
  json pod = {{"metadata", {{"name", "urgent"}, {"namespace", ns}, {"uid", "urgent-uid"}}},
              {"spec", {{"priority", priority}}}};
  pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = fraction;
  if (!tenant.empty()) pod["metadata"]["labels"]["tessera.io/tenant"] = tenant;
  return pod;
}

TenantSpec Tenant(std::string name, std::string ns, int64_t guaranteed, int64_t max) {
  TenantSpec t;
  t.name = std::move(name);
  t.namespaces = {std::move(ns)};
  t.guaranteed = GpuQuota{MilliGpu(guaranteed), MemoryMiB(GpuQuota::kUnlimited), GpuQuota::kUnlimited};
  t.max.milli = MilliGpu(max);
  return t;
}

class TenantVerbsTest : public ::testing::Test {
 protected:
  TenantVerbsTest() {
    // n1: two GPUs, each held by four quarter pods of priority 0 in "batch".
    // n2: one GPU held whole by a pod of priority 5000.
    model().UpsertNode("n1", testing::Node("n1").Gpus(2).inventory(), absl::OkStatus());
    model().UpsertNode("n2", testing::Node("n2").Gpus(1).inventory(), absl::OkStatus());
    for (int g = 0; g < 2; ++g) {
      for (char c : std::string("abcd")) Hold(absl::StrCat("g", g, std::string(1, c)), "n1", g, 250, 0);
    }
    Hold("vip", "n2", 0, 1000, 5000);
    model().Publish();
  }
  void Hold(const std::string& uid, const std::string& node, int32_t gpu, int64_t milli, int32_t priority) {
    PodHolding p = testing::Holding(uid, node, gpu, milli);
    p.pod_key = "batch/" + uid;
    p.priority = priority;
    model().UpsertPod(std::move(p));
  }
  ClusterModel& model() { return fixture_.model(); }
  json Preempt(const json& args) {
    absl::StatusOr<std::string> answer = fixture_.service().Preempt(args.dump());
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? json::parse(*answer) : json();
  }
  json Filter(const json& pod) {
    absl::StatusOr<std::string> answer =
        fixture_.service().Filter(json{{"Pod", pod}, {"NodeNames", {"n1", "n2"}}}.dump());
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? json::parse(*answer) : json();
  }
  static std::vector<std::string> Uids(const json& victims) {
    std::vector<std::string> out;
    for (const json& p : victims["Pods"]) out.push_back(p["UID"]);
    return out;
  }

  testing::ServiceFixture fixture_;
};

TEST_F(TenantVerbsTest, ThePreemptVerbReplacesVictimsOfTwoGpusByTwoOfOneAndDropsNodesWithoutAWorkingSet) {
  const json args = {{"Pod", PodJson("web", 1000, "0.5")},
                     {"NodeNameToMetaVictims",
                      {{"n1", {{"Pods", {{{"UID", "g0a"}}, {{"UID", "g1a"}}}}, {"NumPDBViolations", 1}}},
                       {"n2", {{"Pods", {{{"UID", "vip"}}}}, {"NumPDBViolations", 0}}},
                       {"gone", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}}};
  const json answer = Preempt(args);
  ASSERT_TRUE(answer["NodeNameToMetaVictims"].is_object()) << answer.dump();
  const json& nodes = answer["NodeNameToMetaVictims"];
  EXPECT_EQ(nodes.size(), 1u) << "n2's only pod outranks the preemptor; 'gone' is not in the model";
  EXPECT_THAT(Uids(nodes["n1"]), UnorderedElementsAre("g0c", "g0d"));
  EXPECT_EQ(nodes["n1"]["NumPDBViolations"], 0) << "not kube-scheduler's victims: its count does not apply";
}

TEST_F(TenantVerbsTest, TheRecordedPreemptRequestsGetKubeSchedulersVictimsBackForAPodWithoutAGpuRequest) {
  for (const auto& [request, response] : {std::pair{"preempt-request.json", "preempt-response.json"},
                                          std::pair{"preempt-request-fullnodes.json", "preempt-response-fullnodes.json"}}) {
    SCOPED_TRACE(request);
    absl::StatusOr<std::string> answer =
        fixture_.service().Preempt(testing::ReadFile(testing::FixturePath(request)));
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(json::parse(*answer), json::parse(testing::ReadFile(testing::FixturePath(response))));
  }
}

TEST_F(TenantVerbsTest, FilterRefusesAPodOverItsTenantsMaxOnEveryNodeNamingTheNumbers) {
  fixture_.set_tenants({Tenant("research", "ml", 0, 300)});
  const json answer = Filter(PodJson("ml", 0, "0.5"));
  ASSERT_TRUE(answer["FailedAndUnresolvableNodes"].is_object()) << answer.dump();
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"].size(), 2u);
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"]["n1"],
            "tenant research would hold 500 gpu-milli, over its max 300 (it holds 0, the pod asks 500)");
  EXPECT_TRUE(answer["NodeNames"].is_array() && answer["NodeNames"].empty()) << answer.dump();
}

TEST_F(TenantVerbsTest, FilterSaysWhenATenantWouldBorrowButNothingIsIdle) {
  fixture_.set_tenants({Tenant("research", "ml", 0, 5000)});
  const json answer = Filter(PodJson("ml", 0, "0.5"));
  ASSERT_TRUE(answer["FailedNodes"].is_object()) << answer.dump();
  EXPECT_THAT(answer["FailedNodes"]["n1"].get<std::string>(),
              HasSubstr("over its guarantee 0, and only 0 gpu-milli are idle to borrow"));
}

TEST_F(TenantVerbsTest, ATenantLabelNamingNoTenantFailsThePodWithTheKnownTenants) {
  fixture_.set_tenants({Tenant("research", "ml", 0, 5000), Tenant("serving", "web", 0, 5000)});
  const json answer = Filter(PodJson("ml", 0, "0.5", "reserch"));
  EXPECT_EQ(answer["Error"],
            "pod's label tessera.io/tenant=\"reserch\" names no tenant of the policy in force (tenants: research, "
            "serving)");
}

TEST_F(TenantVerbsTest, APodOfNoTenantIsFilteredAsWithoutTenants) {
  fixture_.set_tenants({Tenant("research", "ml", 0, 300)});
  const json answer = Filter(PodJson("elsewhere", 0, "0.5"));
  EXPECT_THAT(answer["FailedNodes"]["n1"].get<std::string>(), HasSubstr("no GPU can take the pod now"));
}

}  // namespace
}  // namespace tessera
