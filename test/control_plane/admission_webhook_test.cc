// The admission webhook on the real control plane: pods created through the
// API server pass Tessera's webhook (HTTPS, caBundle, failurePolicy Fail, as
// the chart ships it) and come back completed, or are refused with its message.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "test/control_plane/webhook_setup.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kVisibleDevicesPath = "metadata.annotations['tessera.io/visible-devices']";

class AdmissionWebhookTest : public ControlPlaneTest {
 protected:
  void SetUp() override {
    ControlPlaneTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    config_ = "tessera-test-" + ns();
    // Only this test's namespace goes through it (kubernetes.io/metadata.name
    // is set on every namespace by the API server).
    const json config = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "MutatingWebhookConfiguration"},
        {"metadata", {{"name", config_}}},
        {"webhooks",
         json::array({{{"name", "pods.tessera.io"},
                       {"admissionReviewVersions", json::array({"v1"})},
                       {"sideEffects", "None"},
                       {"failurePolicy", "Fail"},
                       {"timeoutSeconds", 5},
                       {"reinvocationPolicy", "IfNeeded"},
                       {"clientConfig",
                        {{"url", absl::StrCat("https://127.0.0.1:", WebhookPort(), "/mutate-pods")},
                         {"caBundle", absl::Base64Escape(WebhookCaPem())}}},
                       {"rules", json::array({{{"operations", json::array({"CREATE"})},
                                               {"apiGroups", json::array({""})},
                                               {"apiVersions", json::array({"v1"})},
                                               {"resources", json::array({"pods"})},
                                               {"scope", "Namespaced"}}})},
                       {"namespaceSelector",
                        {{"matchExpressions", json::array({{{"key", "kubernetes.io/metadata.name"},
                                                            {"operator", "In"},
                                                            {"values", json::array({ns()})}}})}}}}})}};
    absl::StatusOr<k8s::ApiResponse> created =
        plane().Send("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", config.dump());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_EQ(created->status, 201) << created->body;
    // The API server takes up a new configuration a moment later: wait until
    // a pod the webhook refuses is refused.
    absl::StatusOr<k8s::ApiResponse> probe;
    absl::Status deleted;
    ASSERT_TRUE(Eventually(
        [&] {
          probe = CreateRaw("probe", {{"tessera.io/gpu-fraction", "lots"}});
          if (!probe.ok()) return true;  // failed below
          if (probe->status == 201 && !(deleted = plane().DeletePod(ns(), "probe")).ok()) return true;
          return probe->status == 400;  // refused by the webhook
        },
        absl::Seconds(15), "the webhook to refuse a pod"))
        << "last: HTTP " << probe->status << " " << probe->body << "\n" << plane().LogTails();
    ASSERT_TRUE(probe.ok()) << probe.status();
    ASSERT_TRUE(deleted.ok()) << deleted;
  }

  void TearDown() override {
    if (!config_.empty()) {
      (void)plane().Send("DELETE", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + config_);
    }
    ControlPlaneTest::TearDown();
  }

  // A pod as a user writes it: no schedulerName, no resources, one container.
  absl::StatusOr<k8s::ApiResponse> CreateRaw(const std::string& name, const json& annotations) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns()}}},
                {"spec",
                 {{"terminationGracePeriodSeconds", 0},
                  {"nodeSelector", {{"tessera.io/test", ns()}}},
                  {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
    if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
    return plane().Send("POST", absl::StrCat("/api/v1/namespaces/", ns(), "/pods"), pod.dump());
  }

  std::string config_;
};

TEST_F(AdmissionWebhookTest, AGpuPodComesBackWithResourcesSchedulerNameAndEnvAndBinds) {
  ASSERT_TRUE(Node("a", 1).ok());
  absl::StatusOr<k8s::ApiResponse> created = CreateRaw("half", {{"tessera.io/gpu-fraction", "0.5"}});
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 201) << created->body;
  const json pod = json::parse(created->body);
  EXPECT_EQ(pod["spec"]["schedulerName"], "tessera-scheduler");
  const json& main = pod["spec"]["containers"][0];
  EXPECT_EQ(main["resources"]["requests"]["tessera.io/gpu-milli"], "500") << main.dump();
  EXPECT_EQ(main["resources"]["limits"]["tessera.io/gpu-milli"], "500") << main.dump();
  bool has_env = false;
  for (const json& env : main.value("env", json::array())) {
    if (env.value("name", "") == "NVIDIA_VISIBLE_DEVICES") {
      has_env = env["valueFrom"]["fieldRef"]["fieldPath"] == kVisibleDevicesPath;
    }
  }
  EXPECT_TRUE(has_env) << main.dump();

  absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(ns(), "the mutated pod bound", [](const auto& pods) {
    return pods.size() == 1 && IsBound(pods[0]) && !Annotation(pods[0], "tessera.io/visible-devices").empty();
  });
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(Annotation((*pods)[0], "tessera.io/visible-devices"), "GPU-" + ns() + "-a-0");
}

TEST_F(AdmissionWebhookTest, APodWithABadAnnotationIsRefusedWithTheWebhooksMessage) {
  absl::StatusOr<k8s::ApiResponse> created = CreateRaw("bad", {{"tessera.io/gpu-fraction", "1.5"}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->status, 400) << created->body;
  const std::string message = json::parse(created->body).value("message", "");
  EXPECT_THAT(message, HasSubstr("admission webhook \"pods.tessera.io\" denied the request"));
  EXPECT_THAT(message, HasSubstr("gpu-fraction"));
}

TEST_F(AdmissionWebhookTest, APodWithoutGpusIsUntouched) {
  absl::StatusOr<k8s::ApiResponse> created = CreateRaw("plain", json::object());
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 201) << created->body;
  const json pod = json::parse(created->body);
  EXPECT_EQ(pod["spec"]["schedulerName"], "default-scheduler");
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("env"));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"], json::object());
}

}  // namespace
}  // namespace tessera::testing
