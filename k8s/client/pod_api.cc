#include "k8s/client/pod_api.h"

#include "absl/strings/str_cat.h"
#include "k8s/internal/json.h"
#include "k8s/pod_record.h"
#include "k8s/client/reflector.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

std::string PodPath(std::string_view ns, std::string_view name) {
  return absl::StrCat("/api/v1/namespaces/", QueryEscape(ns), "/pods/", QueryEscape(name));
}

// Whether a Status body's details.causes name `field`.
bool CauseNames(std::string_view body, std::string_view field) {
  simdjson::dom::element root;
  simdjson::dom::array causes;
  if (internal::ParseJson(body).get(root) != simdjson::SUCCESS ||
      root.at_pointer("/details/causes").get(causes) != simdjson::SUCCESS) {
    return false;
  }
  for (simdjson::dom::element cause : causes) {
    std::string_view named;
    if (cause["field"].get(named) == simdjson::SUCCESS && named == field) return true;
  }
  return false;
}

absl::Status ErrorOf(std::string_view what, const ApiResponse& r) {
  const std::string message = absl::StrCat(Absl(what), ": HTTP ", r.status, ": ", StatusMessage(r.body));
  switch (r.status) {
    case 404: return absl::NotFoundError(message);
    case 409: return absl::FailedPreconditionError(message);
    case 422:
      // A patch whose metadata.uid is not the pod's: kube-apiserver answers
      // 422 "metadata.uid: field is immutable", not 409 (a Binding's or an
      // Eviction's uid precondition is a 409). Either way the pod was replaced.
      if (CauseNames(r.body, "metadata.uid")) return absl::FailedPreconditionError(message);
      return absl::UnavailableError(message);
    case 401:
    case 403: return absl::PermissionDeniedError(message);
    case 408:
    case 504: return absl::DeadlineExceededError(message);
    default: return absl::UnavailableError(message);
  }
}

}  // namespace

absl::StatusOr<PodRecord> KubePodApi::GetPod(std::string_view namespace_name, std::string_view name,
                                             absl::Time deadline) {
  const std::string path = PodPath(namespace_name, name);
  absl::StatusOr<ApiResponse> r = client_.Send("GET", path, {}, {}, deadline);
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf(absl::StrCat("GET ", path), *r);
  simdjson::dom::element root;
  if (auto err = internal::ParseJson(r->body).get(root); err) {
    return absl::DataLossError(absl::StrCat("GET ", path, ": ", simdjson::error_message(err)));
  }
  return DecodePodRecord(root);
}

namespace {

// `"annotations":{...}` of a JSON object, keys and values escaped.
void AppendAnnotations(std::string& body, const PodApi::Annotations& annotations) {
  body += "\"annotations\":{";
  for (size_t i = 0; i < annotations.size(); ++i) {
    if (i > 0) body += ',';
    AppendJsonString(body, annotations[i].first);
    body += ':';
    AppendJsonString(body, annotations[i].second);
  }
  body += '}';
}

}  // namespace

absl::Status KubePodApi::Annotate(const PodRef& pod, const Annotations& annotations) {
  // A JSON merge patch; metadata.uid cannot change, so the API server treats
  // it as a precondition and refuses the patch (422, see ErrorOf) if the pod
  // was replaced meanwhile.
  std::string body = "{\"metadata\":{\"uid\":";
  AppendJsonString(body, pod.uid);
  body += ',';
  AppendAnnotations(body, annotations);
  body += "}}";
  const std::string path = PodPath(pod.namespace_name, pod.name);
  absl::StatusOr<ApiResponse> r = client_.Send("PATCH", path, body, "application/merge-patch+json");
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf(absl::StrCat("PATCH ", path), *r);
  return absl::OkStatus();
}

absl::Status KubePodApi::Bind(const PodRef& pod, std::string_view node, const Annotations& annotations,
                              absl::Time deadline) {
  std::string body = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":";
  AppendJsonString(body, pod.name);
  body += ",\"namespace\":";
  AppendJsonString(body, pod.namespace_name);
  body += ",\"uid\":";
  AppendJsonString(body, pod.uid);
  if (!annotations.empty()) {
    body += ',';
    AppendAnnotations(body, annotations);
  }
  body += "},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":";
  AppendJsonString(body, node);
  body += "}}";
  const std::string path = absl::StrCat(PodPath(pod.namespace_name, pod.name), "/binding");
  absl::StatusOr<ApiResponse> r = client_.Send("POST", path, body, "application/json", deadline);
  if (!r.ok()) return r.status();
  if (r->status != 201 && r->status != 200) return ErrorOf(absl::StrCat("POST ", path), *r);
  return absl::OkStatus();
}

namespace {

// The Status body's message and its details' causes: a 429 from the eviction
// subresource says only "Cannot evict pod as it would violate the pod's
// disruption budget."; the budget's name is in a cause ("The disruption
// budget web-pdb needs 1 healthy pods and has 1 currently").
std::string MessageWithCauses(std::string_view body) {
  std::string message = StatusMessage(body);
  simdjson::dom::element root;
  simdjson::dom::array causes;
  if (internal::ParseJson(body).get(root) != simdjson::SUCCESS ||
      root.at_pointer("/details/causes").get(causes) != simdjson::SUCCESS) {
    return message;
  }
  for (simdjson::dom::element cause : causes) {
    std::string_view text;
    if (cause["message"].get(text) == simdjson::SUCCESS && !text.empty()) absl::StrAppend(&message, " ", Absl(text));
  }
  return message;
}

}  // namespace

absl::Status KubePodApi::Evict(const PodRef& pod, absl::Time deadline) {
  // deleteOptions.preconditions.uid: the delete the eviction makes checks it,
  // so a pod recreated under the same name is refused with 409.
  std::string body = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":";
  AppendJsonString(body, pod.name);
  body += ",\"namespace\":";
  AppendJsonString(body, pod.namespace_name);
  body += "},\"deleteOptions\":{\"preconditions\":{\"uid\":";
  AppendJsonString(body, pod.uid);
  body += "}}}";
  const std::string path = absl::StrCat(PodPath(pod.namespace_name, pod.name), "/eviction");
  absl::StatusOr<ApiResponse> r = client_.Send("POST", path, body, "application/json", deadline);
  if (!r.ok()) return r.status();
  if (r->status == 200 || r->status == 201) return absl::OkStatus();
  if (r->status == 429) {
    return absl::ResourceExhaustedError(
        absl::StrCat("POST ", path, ": HTTP 429: ", MessageWithCauses(r->body)));
  }
  return ErrorOf(absl::StrCat("POST ", path), *r);
}

absl::Status KubePodApi::Nominate(const PodRef& pod, std::string_view node, absl::Time deadline) {
  // A merge patch of the status subresource, as kube-scheduler writes it; null
  // removes the field. metadata.uid is a precondition, as in Annotate.
  std::string body = "{\"metadata\":{\"uid\":";
  AppendJsonString(body, pod.uid);
  body += "},\"status\":{\"nominatedNodeName\":";
  if (node.empty()) {
    body += "null";
  } else {
    AppendJsonString(body, node);
  }
  body += "}}";
  const std::string path = absl::StrCat(PodPath(pod.namespace_name, pod.name), "/status");
  absl::StatusOr<ApiResponse> r = client_.Send("PATCH", path, body, "application/merge-patch+json", deadline);
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf(absl::StrCat("PATCH ", path), *r);
  return absl::OkStatus();
}

}  // namespace tessera::k8s
