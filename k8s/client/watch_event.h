// One line of a watch stream: {"type": "...", "object": {...}}.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
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

}  // namespace tessera::k8s
