#include "k8s/client/watch_event.h"

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

absl::StatusOr<WatchEvent> ParseWatchEvent(simdjson::dom::parser& parser, std::string_view line) {
  simdjson::dom::object event;
  if (auto err = parser.parse(line.data(), line.size(), true).get(event); err) {
    return absl::InvalidArgumentError(absl::StrCat("not a JSON object: ", simdjson::error_message(err)));
  }
  std::string_view type;
  if (event["type"].get(type) != simdjson::SUCCESS) return absl::InvalidArgumentError("event has no type");
  WatchEvent out{};
  if (type == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    out.type = WatchEventType::kError;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown event type \"", Absl(type), "\""));
  }
  simdjson::dom::object object;
  if (event["object"].get(object) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat("event ", Absl(type), " has no object"));
  }
  out.object = event["object"].value_unsafe();
  simdjson::dom::object meta;
  if (object["metadata"].get(meta) == simdjson::SUCCESS) {
    if (meta["resourceVersion"].get(out.resource_version) != simdjson::SUCCESS) out.resource_version = {};
  }
  return out;
}

}  // namespace tessera::k8s
