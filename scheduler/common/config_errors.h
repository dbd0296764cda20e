// The error list that policy-file validation fills in.
//
// Validation never stops at the first problem: the loader and every plugin
// factory add to one shared list, and the user sees all of them at once, each
// as `file:line:column: field.path: message`, sorted by position (after
// Kubernetes' field.ErrorList).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "yaml-cpp/mark.h"

namespace tessera {

/// One problem in a policy file.
struct ConfigError {
  int line = 0;         ///< 1-based; 0 when the error has no position (unreadable file).
  int column = 0;       ///< 1-based; 0 when unknown.
  std::string path;     ///< Field path, "plugins[0].args.nodeStrategy"; empty for the file as a whole.
  std::string message;  ///< What is wrong, "must be one of binpack, spread; got \"pack\"".

  bool operator==(const ConfigError&) const = default;
};

/// Collects the errors of one file. Not thread-safe: one load runs on one thread.
class ConfigErrors {
 public:
  /// \param file_name how messages name the file ("policy.yaml").
  explicit ConfigErrors(std::string file_name) : file_name_(std::move(file_name)) {}

  /// Records an error at `mark` (yaml-cpp's 0-based position; a null mark
  /// records no position).
  void Add(const YAML::Mark& mark, std::string path, std::string message);

  /// Number of errors so far; also a checkpoint for Status(from).
  [[nodiscard]] size_t size() const { return errors_.size(); }
  [[nodiscard]] bool empty() const { return errors_.empty(); }
  [[nodiscard]] const std::string& file_name() const { return file_name_; }

  /// The errors recorded since checkpoint `from`, sorted by line then column
  /// (errors without a position first; ties keep the order they were found).
  [[nodiscard]] std::vector<ConfigError> Sorted(size_t from = 0) const;

  /// One error as the user sees it: `file:line:column: path: message`.
  [[nodiscard]] std::string Format(const ConfigError& error) const;

  /// \return OK when no error was recorded since `from`, else InvalidArgument
  /// whose message is those errors, formatted and sorted, one per line.
  [[nodiscard]] absl::Status ToStatus(size_t from = 0) const;

 private:
  std::string file_name_;
  std::vector<ConfigError> errors_;
};

/// Joins a field path: JoinPath("plugins[0]", "name") == "plugins[0].name";
/// an empty prefix or key yields the other.
std::string JoinPath(std::string_view prefix, std::string_view key);

}  // namespace tessera
