// One line of a watch stream: {"type": "...", "object": {...}}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "simdjson.h"

namespace tessera::k8s {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type;
  simdjson::dom::element object;     ///< Lives in the parser until its next parse.
  std::string_view resource_version; ///< object.metadata.resourceVersion; may be empty.
};

/// Parses one watch line with `parser`. InvalidArgument when the line is not
/// JSON, has no object, or an unknown type.
absl::StatusOr<WatchEvent> ParseWatchEvent(simdjson::dom::parser& parser, std::string_view line);

/// The Status an API server ends a watch with: an ERROR event's object, or
/// the body of a watch request answered other than 200.
struct WatchStatus {
  int64_t code = 0;     ///< The Status's code, else the HTTP status (410, 429, 504, ...).
  std::string reason;   ///< "Expired", "Gone", "Timeout", "TooManyRequests", ...; may be empty.
  std::string message;  ///< What the server said, for the log.
  /// details.retryAfterSeconds: the server's word on when to try again (a
  /// v1.36 API server whose etcd lags a resourceVersion it was shown says 1 s,
  /// "Too large resource version"); zero when it said nothing.
  absl::Duration retry_after = absl::ZeroDuration();

  /// The resourceVersion left the server's history (410): only a new list
  /// catches up. Every other Status is retried from the same resourceVersion
  /// after a backoff of at least retry_after, as client-go's reflector does.
  [[nodiscard]] bool gone() const { return code == 410 || reason == "Expired" || reason == "Gone"; }
};

/// Reads a Status object (fields missing are left empty); `http_status` is the
/// code when the object has none.
WatchStatus ParseWatchStatus(simdjson::dom::element status, int64_t http_status = 0);
/// The same from a body's text; a body that is no JSON object gives its first
/// 200 bytes as the message.
WatchStatus ParseWatchStatus(simdjson::dom::parser& parser, std::string_view body, int64_t http_status);

}  // namespace tessera::k8s
