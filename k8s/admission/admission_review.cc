#include "k8s/admission/admission_review.h"

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using json = nlohmann::json;

// The member, when `obj` is an object holding one of the given type.
const json* Typed(const json& obj, const char* key, json::value_t type) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->type() != type ? nullptr : &*it;
}

std::string Answer(const std::string& uid, const json& response_fields) {
  json response = response_fields;
  response["uid"] = uid;
  const json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
  // Reasons quote annotation values, which need not be valid UTF-8.
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsPodCreate(const json& request) {
  const json* operation = Typed(request, "operation", json::value_t::string);
  const json* kind = Typed(request, "kind", json::value_t::object);
  const json* kind_name = kind != nullptr ? Typed(*kind, "kind", json::value_t::string) : nullptr;
  const json* group = kind != nullptr ? Typed(*kind, "group", json::value_t::string) : nullptr;
  return operation != nullptr && *operation == "CREATE" && kind_name != nullptr && *kind_name == "Pod" &&
         (group == nullptr || group->get<std::string>().empty());
}

}  // namespace

absl::StatusOr<std::string> AnswerPodAdmission(std::string_view body, const PodMutationOptions& options) {
  const json review = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return absl::InvalidArgumentError("the body is not JSON");
  const json* api_version = Typed(review, "apiVersion", json::value_t::string);
  if (api_version == nullptr || *api_version != "admission.k8s.io/v1") {
    return absl::InvalidArgumentError("apiVersion must be admission.k8s.io/v1 (an AdmissionReview)");
  }
  const json* request = Typed(review, "request", json::value_t::object);
  const json* uid = request != nullptr ? Typed(*request, "uid", json::value_t::string) : nullptr;
  if (uid == nullptr) return absl::InvalidArgumentError("request.uid is missing");
  if (!IsPodCreate(*request)) return Answer(*uid, {{"allowed", true}});
  const json* pod = Typed(*request, "object", json::value_t::object);
  if (pod == nullptr) return absl::InvalidArgumentError("request.object (the pod) is missing");

  absl::StatusOr<std::vector<JsonPatchOp>> patch = MutateGpuPod(*pod, options);
  if (!patch.ok()) {
    return Answer(*uid, {{"allowed", false},
                         {"status",
                          {{"code", 400}, {"reason", "BadRequest"}, {"message", std::string(patch.status().message())}}}});
  }
  if (patch->empty()) return Answer(*uid, {{"allowed", true}});
  return Answer(*uid, {{"allowed", true},
                       {"patchType", "JSONPatch"},
                       {"patch", absl::Base64Escape(Absl(FormatJsonPatch(*patch)))}});
}

}  // namespace tessera::k8s
