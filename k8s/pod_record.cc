#include "k8s/pod_record.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "k8s/extender_args.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

// A string at `outer.inner` of `o`; empty when absent; an error when not a string.
absl::StatusOr<std::string_view> NestedString(simdjson::dom::object o, std::string_view outer, std::string_view inner,
                                              std::string_view path) {
  simdjson::dom::element parent;
  if (o.at_key(outer).get(parent) != simdjson::SUCCESS || parent.is_null()) return std::string_view();
  simdjson::dom::object parent_object;
  if (parent.get(parent_object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".", Absl(outer), " must be an object"));
  }
  simdjson::dom::element e;
  if (parent_object.at_key(inner).get(e) != simdjson::SUCCESS || e.is_null()) return std::string_view();
  std::string_view s;
  if (e.get(s) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".", Absl(outer), ".", Absl(inner), " must be a string"));
  }
  return s;
}

}  // namespace

absl::StatusOr<PodRecord> DecodePodRecord(simdjson::dom::element pod, std::string_view path) {
  absl::StatusOr<WirePod> wire = DecodePodObject(pod, path);
  if (!wire.ok()) return wire.status();
  if (wire->uid.empty()) return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".metadata.uid is missing"));
  if (wire->name.empty()) return absl::InvalidArgumentError(absl::StrCat(Absl(path), ".metadata.name is missing"));
  simdjson::dom::object o;
  if (pod.get(o) != simdjson::SUCCESS) return absl::InvalidArgumentError(absl::StrCat(Absl(path), " must be an object"));
  absl::StatusOr<std::string_view> node = NestedString(o, "spec", "nodeName", path);
  if (!node.ok()) return node.status();
  absl::StatusOr<std::string_view> phase = NestedString(o, "status", "phase", path);
  if (!phase.ok()) return phase.status();
  PodRecord out;
  out.uid = std::string(wire->uid);
  out.namespace_name = std::string(wire->namespace_name);
  out.name = std::string(wire->name);
  out.node_name = std::string(*node);
  out.phase = std::string(*phase);
  for (auto& [key, value] : wire->annotations) out.annotations.emplace(key, std::move(value));
  out.host = wire->host;
  out.priority = wire->priority;
  out.tenant_label = std::string(wire->tenant_label);
  out.task_type = std::string(wire->task_type);
  out.host_error = std::move(wire->host_error);
  // The bind time: PodScheduled's lastTransitionTime (load-aware estimates
  // pods bound after the last utilisation sample). Best effort: absent or
  // unreadable leaves it unknown.
  simdjson::dom::array conditions;
  if (o["status"]["conditions"].get(conditions) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : conditions) {
      std::string_view type, status, when;
      if (c["type"].get(type) != simdjson::SUCCESS || type != "PodScheduled") continue;
      if (c["status"].get(status) != simdjson::SUCCESS || status != "True") continue;
      if (c["lastTransitionTime"].get(when) != simdjson::SUCCESS) continue;
      absl::Time t;
      std::string error;
      if (absl::ParseTime(absl::RFC3339_full, Absl(when), &t, &error)) out.scheduled_at = t;
    }
  }
  return out;
}

bool IsTerminalPhase(std::string_view phase) { return phase == "Succeeded" || phase == "Failed"; }

}  // namespace tessera::k8s
