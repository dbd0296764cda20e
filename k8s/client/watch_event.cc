#include "k8s/client/watch_event.h"

#include <algorithm>

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

WatchStatus ParseWatchStatus(simdjson::dom::element status, int64_t http_status) {
  WatchStatus out;
  if (status["code"].get(out.code) != simdjson::SUCCESS) out.code = http_status;
  std::string_view text;
  if (status["reason"].get(text) == simdjson::SUCCESS) out.reason = std::string(text);
  if (status["message"].get(text) == simdjson::SUCCESS) out.message = std::string(text);
  int64_t seconds = 0;
  // Bounded: a server's word is a hint, not a reason to stop watching for an hour.
  if (status["details"]["retryAfterSeconds"].get(seconds) == simdjson::SUCCESS && seconds > 0) {
    out.retry_after = absl::Seconds(std::min<int64_t>(seconds, 60));
  }
  return out;
}

WatchStatus ParseWatchStatus(simdjson::dom::parser& parser, std::string_view body, int64_t http_status) {
  simdjson::dom::element status;
  if (parser.parse(body.data(), body.size(), true).get(status) == simdjson::SUCCESS && status.is_object()) {
    return ParseWatchStatus(status, http_status);
  }
  WatchStatus out;
  out.code = http_status;
  out.message = std::string(body.substr(0, 200));
  return out;
}

}  // namespace tessera::k8s
