// GPUs as Kubernetes counts them (docs/concepts/extended-resources.md):
// Tessera keeps every GPU node's tessera.io/gpu-milli and gpu-memory-mib in
// its status, on the real API server, and a namespace quota on them is
// enforced by Kubernetes itself.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "scheduler/model/quantity_parse.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

class GpuCapacityTest : public ControlPlaneClientTest {
 protected:
  absl::StatusOr<k8s::ApiResponse> Send(std::string_view method, const std::string& path, const json& body = nullptr,
                                        std::string_view type = "application/json") {
    return client().Send(method, path, body.is_null() ? "" : body.dump(), body.is_null() ? "" : type);
  }

  // Polls the node until its status advertises `milli` and `mib` in capacity
  // and allocatable (as quantities: the API server writes 2000 as "2k").
  bool WaitForAdvertised(const std::string& node, int64_t milli, int64_t mib) {
    auto amount = [](const json& list, const char* resource) {
      absl::StatusOr<int64_t> n = k8s::ParseCount(list.value(resource, ""));
      return n.ok() ? *n : -1;
    };
    const bool advertised = WaitFor(
        [&] {
          absl::StatusOr<k8s::ApiResponse> r = Send("GET", "/api/v1/nodes/" + node);
          if (!r.ok() || r->status != 200) return false;
          const json status = json::parse(r->body)["status"];
          bool all = true;
          for (const char* list : {"capacity", "allocatable"}) {
            all = all && amount(status[list], "tessera.io/gpu-milli") == milli &&
                  amount(status[list], "tessera.io/gpu-memory-mib") == mib;
          }
          return all;
        },
        absl::Seconds(20));
    if (advertised) return true;
    absl::StatusOr<k8s::ApiResponse> r = Send("GET", "/api/v1/nodes/" + node);
    ADD_FAILURE() << "the node's status: " << (r.ok() ? json::parse(r->body)["status"].dump() : "unreadable");
    return false;
  }

};

TEST_F(GpuCapacityTest, AGpuNodeAdvertisesItsGpusAndGetsThemBackWhenAKubeletDropsThem) {
  absl::StatusOr<json> node = Node("a", 2);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string name = (*node)["metadata"]["name"];
  EXPECT_TRUE(WaitForAdvertised(name, 2000, 163840)) << plane().LogTails();

  // What a kubelet that re-registers does to resources it does not manage.
  const json dropped = {{"status",
                         {{"capacity", {{"tessera.io/gpu-milli", nullptr}, {"tessera.io/gpu-memory-mib", nullptr}}},
                          {"allocatable", {{"tessera.io/gpu-milli", nullptr}}}}}};
  absl::StatusOr<k8s::ApiResponse> r =
      Send("PATCH", "/api/v1/nodes/" + name + "/status", dropped, "application/merge-patch+json");
  ASSERT_TRUE(r.ok() && r->status == 200);
  EXPECT_TRUE(WaitForAdvertised(name, 2000, 163840)) << "not published again";
}

TEST_F(GpuCapacityTest, ANamespaceQuotaOnGpuMilliRefusesAPodOverItWithKubernetesOwnMessage) {
  // The quota, and its status as a controller would set it (none runs here: shared/kube/README.md).
  const json quota = {{"apiVersion", "v1"},
                      {"kind", "ResourceQuota"},
                      {"metadata", {{"name", "gpus"}}},
                      {"spec", {{"hard", {{"requests.tessera.io/gpu-milli", "1000"}}}}}};
  const std::string quotas = absl::StrCat("/api/v1/namespaces/", ns(), "/resourcequotas");
  ASSERT_EQ(Send("POST", quotas, quota)->status, 201);
  const json status = {{"status",
                        {{"hard", {{"requests.tessera.io/gpu-milli", "1000"}}},
                         {"used", {{"requests.tessera.io/gpu-milli", "0"}}}}}};
  ASSERT_EQ(Send("PATCH", quotas + "/gpus/status", status, "application/merge-patch+json")->status, 200);

  // Pods as the webhook completes them: the annotation and the matching requests = limits.
  auto pod = [&](const std::string& name, const std::string& milli = "600", const std::string& query = "") {
    const json amounts = {{"tessera.io/gpu-milli", milli}};
    const json p = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", name}, {"annotations", {{"tessera.io/gpu-fraction", "0.6"}}}}},
                    {"spec",
                     {{"schedulerName", "tessera-scheduler"},
                      {"containers", json::array({{{"name", "main"},
                                                   {"image", "cuda"},
                                                   {"resources", {{"requests", amounts}, {"limits", amounts}}}}})}}}};
    return Send("POST", absl::StrCat("/api/v1/namespaces/", ns(), "/pods", query), p);
  };
  // The quota admission reads quotas from an informer: until it has seen the
  // status just written, it lets pods through uncounted (seen once in a CI
  // run: both pods admitted). A dry run over the whole quota is refused once
  // it has; nothing is created meanwhile.
  int probe = 0;
  absl::StatusOr<k8s::ApiResponse> dry;
  ASSERT_TRUE(Eventually(
      [&] {
        dry = pod(absl::StrCat("probe-", probe++), "1100", "?dryRun=All");
        return !dry.ok() || dry->status == 403;  // an error: failed below
      },
      absl::Seconds(20), "the quota to be enforced on a dry run"))
      << dry->body;
  ASSERT_TRUE(dry.ok());
  absl::StatusOr<k8s::ApiResponse> first = pod("first");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->status, 201) << first->body;
  absl::StatusOr<k8s::ApiResponse> second = pod("second");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status, 403) << second->body;
  EXPECT_THAT(k8s::StatusMessage(second->body),
              HasSubstr("exceeded quota: gpus, requested: requests.tessera.io/gpu-milli=600, used: "
                        "requests.tessera.io/gpu-milli=600, limited: requests.tessera.io/gpu-milli=1k"));
}

TEST_F(GpuCapacityTest, APodRequestingGpuMilliIsPlacedOnlyWhereKubeSchedulerSeesTheCapacity) {
  absl::StatusOr<json> node = Node("a", 1);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string name = (*node)["metadata"]["name"];
  ASSERT_TRUE(WaitForAdvertised(name, 1000, 81920));
  const json amounts = {{"tessera.io/gpu-milli", "500"}};
  for (const std::string pod_name : {"half-1", "half-2", "half-3"}) {
    const json p = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", pod_name}, {"annotations", {{"tessera.io/gpu-fraction", "0.5"}}}}},
                    {"spec",
                     {{"schedulerName", "tessera-scheduler"},
                      {"terminationGracePeriodSeconds", 0},
                      {"nodeSelector", {{"tessera.io/test", ns()}}},
                      {"containers", json::array({{{"name", "main"},
                                                   {"image", "cuda"},
                                                   {"resources", {{"requests", amounts}, {"limits", amounts}}}}})}}}};
    ASSERT_EQ(Send("POST", absl::StrCat("/api/v1/namespaces/", ns(), "/pods"), p)->status, 201);
  }
  // Two halves fit; the third is refused, by kube-scheduler's own NodeResourcesFit as by Tessera.
  absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(
      ns(), "two pods bound and one unschedulable", [](const std::vector<json>& ps) {
        int bound = 0;
        int refused = 0;
        for (const json& p : ps) {
          bound += IsBound(p) ? 1 : 0;
          refused += UnschedulableMessage(p).empty() ? 0 : 1;
        }
        return bound == 2 && refused == 1;
      });
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& p : *pods) {
    if (!IsBound(p)) {
      EXPECT_THAT(UnschedulableMessage(p), HasSubstr("Insufficient tessera.io/gpu-milli"));
    }
  }
}

}  // namespace
}  // namespace tessera::testing
