// The webhook's wire, as the API server sends an AdmissionReview and reads
// the answer: uid echoed, a base64 JSON Patch, refusals kubectl can print.
#include "k8s/admission/admission_review.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"

namespace tessera::k8s {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

std::string Review(const json& pod, const std::string& operation = "CREATE", const std::string& kind = "Pod") {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", kind}}},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"namespace", "ml"},
                {"operation", operation},
                {"userInfo", {{"username", "alice"}}},
                {"object", pod},
                {"dryRun", false}}}}
      .dump();
}

json GpuPod(const std::string& fraction) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "train"}, {"annotations", {{"tessera.io/gpu-fraction", fraction}}}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "cuda"}}})}}}};
}

json Response(const std::string& body) { return json::parse(body)["response"]; }

TEST(AdmissionReviewTest, AGpuPodIsAllowedWithItsPatchAndTheRequestUid) {
  absl::StatusOr<std::string> answer = AnswerPodAdmission(Review(GpuPod("0.5")), {});
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json review = json::parse(*answer);
  EXPECT_EQ(review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(review["kind"], "AdmissionReview");
  const json& r = review["response"];
  EXPECT_EQ(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["patchType"], "JSONPatch");
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(r["patch"].get<std::string>(), &patch));
  const json pod = GpuPod("0.5").patch(json::parse(patch));
  EXPECT_EQ(pod["spec"]["schedulerName"], "tessera-scheduler");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["tessera.io/gpu-milli"], "500");
}

TEST(AdmissionReviewTest, ARefusedPodIsNotAllowedAndTheMessageSaysWhy) {
  absl::StatusOr<std::string> answer = AnswerPodAdmission(Review(GpuPod("1.5")), {});
  ASSERT_TRUE(answer.ok()) << answer.status();
  const json r = Response(*answer);
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["code"], 400);
  EXPECT_THAT(r["status"]["message"].get<std::string>(), HasSubstr("tessera.io/gpu-fraction=\"1.5\""));
  EXPECT_FALSE(r.contains("patch"));
}

TEST(AdmissionReviewTest, WhatIsNotAPodCreateOrAsksForNoGpuIsAllowedUntouched) {
  const json plain = {{"metadata", {{"name", "web"}}}, {"spec", {{"containers", json::array({{{"name", "c"}}})}}}};
  for (const std::string& body : {Review(GpuPod("0.5"), "UPDATE"), Review(GpuPod("0.5"), "CREATE", "Deployment"),
                                  Review(plain)}) {
    absl::StatusOr<std::string> answer = AnswerPodAdmission(body, {});
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(Response(*answer)["allowed"], true);
    EXPECT_FALSE(Response(*answer).contains("patch")) << *answer;
  }
}

TEST(AdmissionReviewTest, WhatIsNotAnAdmissionReviewIsABadRequest) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not JSON"},
      {R"({"apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"x"}})", "admission.k8s.io/v1"},
      {R"({"apiVersion":"admission.k8s.io/v1","request":{}})", "request.uid"},
      {R"({"apiVersion":"admission.k8s.io/v1","request":{"uid":"x","operation":"CREATE","kind":{"kind":"Pod"}}})",
       "request.object"},
      {R"([1,2])", "admission.k8s.io/v1"},
  };
  for (const auto& [body, reason] : cases) {
    SCOPED_TRACE(body);
    absl::StatusOr<std::string> answer = AnswerPodAdmission(body, {});
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(answer.status().message()), HasSubstr(reason));
  }
}

}  // namespace
}  // namespace tessera::k8s
