// The admission webhook's body (k8s/admission/admission_review.h): any
// AdmissionReview the API server (or anyone reaching the port) sends. An
// answer must be a JSON AdmissionReview whose patch, when there is one, is a
// JSON Patch that applies to the pod it was made for.
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "fuzz/fuzz_input.h"
#include "k8s/admission/admission_review.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  using json = nlohmann::json;
  const std::string_view body = fuzz::AsText(data, size);
  for (k8s::GpuEnforcement enforcement : {k8s::GpuEnforcement::kNone, k8s::GpuEnforcement::kMps}) {
    absl::StatusOr<std::string> answer = k8s::AnswerPodAdmission(body, {.enforcement = enforcement});
    if (!answer.ok()) continue;
    const json review = json::parse(*answer, nullptr, false);
    if (review.is_discarded() || !review.contains("response")) fuzz::Violated("an answer is not an AdmissionReview");
    const json& response = review["response"];
    if (!response.contains("patch")) continue;
    std::string patch;
    if (!absl::Base64Unescape(response["patch"].get<std::string>(), &patch)) fuzz::Violated("the patch is not base64");
    const json pod = json::parse(body, nullptr, false)["request"]["object"];
    try {
      (void)pod.patch(json::parse(patch));
    } catch (const json::exception&) {
      fuzz::Violated("the patch does not apply to its pod");
    }
  }
  return 0;
}
