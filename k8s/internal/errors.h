// Internal helpers shared by the k8s parsers: naming a user-supplied value in a
// message, and collecting every problem of one object before reporting.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace tessera::k8s::internal {

/// Renders `value` as a double-quoted, JSON-escaped string for an error
/// message. Values longer than 128 bytes are cut (at a UTF-8 boundary) and
/// end in "...", so that a hostile annotation cannot flood a log line.
std::string Quote(std::string_view value);

/// `key="value"`: how every message names an annotation or label and what it held.
std::string Field(std::string_view key, std::string_view value);

/// Collects the problems of one object so that a user can fix them all in one
/// edit (Kubernetes' field.ErrorList), instead of one per apply.
class ErrorList {
 public:
  /// Keeps at most this many messages; the rest are only counted, which bounds
  /// the status size for a large malformed object.
  static constexpr size_t kMaxMessages = 16;

  void Add(std::string message);
  [[nodiscard]] bool empty() const { return messages_.empty(); }

  /// \return OK when nothing was added, else one InvalidArgument whose message
  ///   joins the problems with "; " in the order they were added.
  [[nodiscard]] absl::Status ToStatus() const;

 private:
  std::vector<std::string> messages_;
  size_t dropped_ = 0;
};

}  // namespace tessera::k8s::internal
