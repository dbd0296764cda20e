#include "agent/publisher.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "k8s/client/reflector.h"
#include "k8s/internal/json.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {
namespace {

absl::Status ErrorOf(std::string_view what, const k8s::ApiResponse& r) {
  const std::string message = absl::StrCat(Absl(what), ": HTTP ", r.status, ": ", k8s::StatusMessage(r.body));
  switch (r.status) {
    case 404: return absl::NotFoundError(message);
    case 401:
    case 403: return absl::PermissionDeniedError(message);
    case 408:
    case 504: return absl::DeadlineExceededError(message);
    default: return absl::UnavailableError(message);
  }
}

// The node's current value of each annotation in `desired` (nullopt: absent).
absl::StatusOr<std::map<std::string, std::optional<std::string>>> CurrentValues(std::string_view path,
                                                                              std::string_view body,
                                                                              const DesiredAnnotations& desired) {
  simdjson::dom::element root;
  if (auto err = k8s::internal::ParseJson(body).get(root); err) {
    return absl::DataLossError(absl::StrCat("GET ", Absl(path), ": ", simdjson::error_message(err)));
  }
  std::map<std::string, std::optional<std::string>> current;
  for (const auto& [key, value] : desired) current[key] = std::nullopt;
  simdjson::dom::object annotations;
  if (root["metadata"]["annotations"].get_object().get(annotations) != simdjson::SUCCESS) return current;
  for (simdjson::dom::key_value_pair field : annotations) {
    auto it = current.find(std::string(field.key));
    std::string_view value;
    if (it != current.end() && field.value.get_string().get(value) == simdjson::SUCCESS) it->second = value;
  }
  return current;
}

}  // namespace

absl::StatusOr<bool> NodePublisher::Publish(const DesiredAnnotations& desired) {
  const std::string path = absl::StrCat("/api/v1/nodes/", k8s::QueryEscape(node_name_));
  absl::StatusOr<k8s::ApiResponse> got = api_.Get(path);
  if (!got.ok()) return got.status();
  if (got->status != 200) return ErrorOf(absl::StrCat("GET ", path), *got);
  absl::StatusOr<std::map<std::string, std::optional<std::string>>> current = CurrentValues(path, got->body, desired);
  if (!current.ok()) return current.status();

  // A merge patch of the annotations that differ; null removes one.
  std::string patch;
  for (const auto& [key, value] : desired) {
    if ((*current)[key] == value) continue;
    patch += patch.empty() ? "{\"metadata\":{\"annotations\":{" : ",";
    AppendJsonString(patch, key);
    patch += ':';
    if (value.has_value()) {
      AppendJsonString(patch, *value);
    } else {
      patch += "null";
    }
  }
  if (patch.empty()) return false;
  patch += "}}}";
  absl::StatusOr<k8s::ApiResponse> patched = api_.Send("PATCH", path, patch, "application/merge-patch+json");
  if (!patched.ok()) return patched.status();
  if (patched->status != 200) return ErrorOf(absl::StrCat("PATCH ", path), *patched);
  return true;
}

}  // namespace tessera::agent
