// DRA beside Tessera on the real API server and kube-scheduler. On v1.36 a
// DRA driver's ResourceSlice (published here by the test, as a driver
// would; no kubelet or driver is needed for allocation) offers a node's GPUs
// that Tessera's inventory has too; kube-scheduler's DynamicResources plugin
// allocates one to a pod's ResourceClaim by itself. Tessera holds that GPU
// like a whole-GPU pod: pods asking for GPUs through Tessera get only the
// other one, and /debug names the node as managed by both. On v1.26, which
// serves no resource.k8s.io, Tessera says so and schedules as ever.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr const char* kDriver = "gpu.example.com";

class DraTest : public ControlPlaneTest {
 protected:
  json Debug() { return json::parse(plane().TesseraGet("/debug").body, nullptr, /*allow_exceptions=*/false); }

  // Polls /debug until `done` holds (at most 20 s).
  bool WaitForDebug(const std::function<bool(const json&)>& done) {
    return WaitFor(
        [&] {
          const json d = Debug();
          return d.is_object() && d.contains("dra") && done(d["dra"]);
        },
        absl::Seconds(20));
  }

  absl::Status Create(const std::string& path, const json& object) {
    absl::StatusOr<k8s::ApiResponse> r = plane().Send("POST", path, object.dump());
    if (!r.ok()) return r.status();
    if (r->status != 201) return absl::InternalError(absl::StrCat("POST ", path, ": HTTP ", r->status, ": ", r->body));
    return absl::OkStatus();
  }
  void TearDown() override {
    if (!slice_.empty()) (void)plane().Send("DELETE", "/apis/resource.k8s.io/v1/resourceslices/" + slice_);
    if (!device_class_.empty()) (void)plane().Send("DELETE", "/apis/resource.k8s.io/v1/deviceclasses/" + device_class_);
    ControlPlaneTest::TearDown();
  }
  std::string slice_;
  std::string device_class_;
};

// A pod of this test asking for one whole GPU through Tessera.
PodSpec WholeGpuPod(const std::string& ns, const std::string& name) {
  return {.namespace_name = ns,
          .name = name,
          .annotations = {{"tessera.io/gpu-fraction", "1"}},
          .node_selector = {{"tessera.io/test", ns}}};
}

TEST_F(DraTest, AGpuAClaimWasAllocatedIsHeldAndSharesGoToTheOtherGpu) {
  if (plane().kube_version() == "1.26") {
    // No resource.k8s.io here: Tessera says so and is ready all the same.
    ASSERT_TRUE(WaitForDebug([](const json& dra) { return dra["api"] == "not served"; })) << Debug().dump(2);
    EXPECT_EQ(Debug()["dra"]["synced"], true);
    ASSERT_TRUE(Node("a", 1).ok());
    ASSERT_TRUE(plane().CreatePod(WholeGpuPod(ns(), "whole")).ok());
    EXPECT_TRUE(plane().WaitForPods(ns(), "the pod bound", [](const auto& p) { return p.size() == 1 && IsBound(p[0]); })
                    .ok());
    return;
  }
  absl::StatusOr<json> node = Node("a", 2);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];

  // What a DRA driver publishes: its device class, and a slice of the node's
  // two GPUs with their UUIDs (the inventory's GPU-<node>-<index>).
  device_class_ = ns() + "." + kDriver;
  ASSERT_TRUE(Create("/apis/resource.k8s.io/v1/deviceclasses",
                     {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "DeviceClass"},
                      {"metadata", {{"name", device_class_}}},
                      {"spec", {{"selectors", json::array({{{"cel", {{"expression",
                                                  absl::StrCat("device.driver == \"", kDriver, "\"")}}}}})}}}})
                  .ok());
  slice_ = node_name + "-gpus";
  json devices = json::array();
  for (int i = 0; i < 2; ++i) {
    devices.push_back({{"name", absl::StrCat("gpu-", i)},
                       {"attributes", {{"uuid", {{"string", absl::StrCat("GPU-", node_name, "-", i)}}},
                                       {"index", {{"int", i}}}}}});
  }
  ASSERT_TRUE(Create("/apis/resource.k8s.io/v1/resourceslices",
                     {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceSlice"},
                      {"metadata", {{"name", slice_}}},
                      {"spec",
                       {{"driver", kDriver},
                        {"nodeName", node_name},
                        {"pool", {{"name", node_name}, {"generation", 1}, {"resourceSliceCount", 1}}},
                        {"devices", devices}}}})
                  .ok());
  ASSERT_TRUE(WaitForDebug([&](const json& dra) {
    return dra["api"] == "served" && dra["sharedNodes"] == json::array({node_name});
  })) << Debug().dump(2);

  // A claim for one GPU of the class, and a pod using it: kube-scheduler
  // allocates it (Tessera is asked about the pod, which wants no GPU of its).
  ASSERT_TRUE(Create(absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", ns(), "/resourceclaims"),
                     {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", {{"name", "one-gpu"}, {"namespace", ns()}}},
                      {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"},
                                                                         {"exactly", {{"deviceClassName", device_class_}}}}})}}}}}})
                  .ok());
  json dra_pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", "dra-user"}, {"namespace", ns()}}},
                  {"spec",
                   {{"schedulerName", "tessera-scheduler"},
                    {"terminationGracePeriodSeconds", 0},
                    {"nodeSelector", {{"tessera.io/test", ns()}}},
                    {"resourceClaims", json::array({{{"name", "gpu"}, {"resourceClaimName", "one-gpu"}}})},
                    {"containers", json::array({{{"name", "main"},
                                                 {"image", "busybox"},
                                                 {"resources", {{"claims", json::array({{{"name", "gpu"}}})}}}}})}}}};
  ASSERT_TRUE(Create(absl::StrCat("/api/v1/namespaces/", ns(), "/pods"), dra_pod).ok());
  absl::StatusOr<std::vector<json>> bound = plane().WaitForPods(
      ns(), "the DRA pod bound", [](const auto& p) { return p.size() == 1 && IsBound(p[0]); }, absl::Seconds(60));
  ASSERT_TRUE(bound.ok()) << bound.status() << plane().LogTails();
  absl::StatusOr<k8s::ApiResponse> claim =
      plane().Send("GET", absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", ns(), "/resourceclaims/one-gpu"));
  ASSERT_TRUE(claim.ok() && claim->status == 200);
  const json results = json::parse(claim->body)["status"]["allocation"]["devices"]["results"];
  ASSERT_THAT(results, SizeIs(1)) << claim->body;
  const std::string allocated = results[0]["device"];  // gpu-0 or gpu-1: kube-scheduler's choice
  const int held_gpu = allocated == "gpu-0" ? 0 : 1;

  ASSERT_TRUE(WaitForDebug([&](const json& dra) { return dra["held"].size() == 1; })) << Debug().dump(2);
  EXPECT_THAT(Debug()["dra"]["held"][0].get<std::string>(),
              HasSubstr(absl::StrCat(ns(), "/one-gpu: ", node_name, " GPU ", held_gpu)));
  EXPECT_THAT(plane().TesseraGet("/metrics").body, HasSubstr("tessera_dra_held_gpus 1"));

  // Two pods asking for a whole GPU each: one gets the other GPU, the second
  // is refused (the claim's GPU is not free to Tessera).
  ASSERT_TRUE(plane().CreatePod(WholeGpuPod(ns(), "whole-1")).ok());
  absl::StatusOr<std::vector<json>> first = plane().WaitForPods(
      ns(), "whole-1 bound", [](const auto& p) {
        for (const json& pod : p) {
          if (pod["metadata"]["name"] == "whole-1") return IsBound(pod);
        }
        return false;
      }, absl::Seconds(60));
  ASSERT_TRUE(first.ok()) << first.status() << plane().LogTails();
  for (const json& pod : *first) {
    if (pod["metadata"]["name"] != "whole-1") continue;
    const json assignment = json::parse(Annotation(pod, "tessera.io/gpu-assignment"));
    EXPECT_EQ(assignment["gpus"][0]["index"], 1 - held_gpu) << "the GPU the claim does not hold";
  }
  ASSERT_TRUE(plane().CreatePod(WholeGpuPod(ns(), "whole-2")).ok());
  absl::StatusOr<std::vector<json>> refused = plane().WaitForPods(
      ns(), "whole-2 refused", [](const auto& p) {
        for (const json& pod : p) {
          if (pod["metadata"]["name"] == "whole-2") return !UnschedulableMessage(pod).empty();
        }
        return false;
      }, absl::Seconds(60));
  ASSERT_TRUE(refused.ok()) << refused.status() << plane().LogTails();
  for (const json& pod : *refused) {
    if (pod["metadata"]["name"] == "whole-2") {
      EXPECT_FALSE(IsBound(pod));
    }
  }

  // Its pod gone, the claim is deallocated (what kube-controller-manager's
  // resourceclaim controller does; none runs on this plane, so the test
  // writes the status it would) and the GPU is Tessera's again.
  ASSERT_TRUE(plane().DeletePod(ns(), "dra-user").ok());
  absl::StatusOr<k8s::ApiResponse> deallocated =
      plane().Send("PATCH", absl::StrCat("/apis/resource.k8s.io/v1/namespaces/", ns(), "/resourceclaims/one-gpu/status"),
                   R"({"status":{"allocation":null,"reservedFor":null}})", "application/merge-patch+json");
  ASSERT_TRUE(deallocated.ok() && deallocated->status == 200) << (deallocated.ok() ? deallocated->body : "");
  ASSERT_TRUE(WaitForDebug([](const json& dra) { return dra["held"].empty(); })) << Debug().dump(2);
  EXPECT_TRUE(plane().WaitForPods(ns(), "whole-2 bound once the claim is gone", [](const auto& p) {
                for (const json& pod : p) {
                  if (pod["metadata"]["name"] == "whole-2") return IsBound(pod);
                }
                return false;
              }, absl::Seconds(60)).ok()) << plane().LogTails();
}

}  // namespace
}  // namespace tessera::testing
