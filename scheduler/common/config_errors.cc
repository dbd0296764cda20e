#include "scheduler/common/config_errors.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tessera {

void ConfigErrors::Add(const YAML::Mark& mark, std::string path, std::string message) {
  ConfigError error;
  if (!mark.is_null()) {
    error.line = mark.line + 1;
    error.column = mark.column + 1;
  }
  error.path = std::move(path);
  error.message = std::move(message);
  errors_.push_back(std::move(error));
}

std::vector<ConfigError> ConfigErrors::Sorted(size_t from) const {
  std::vector<ConfigError> sorted(errors_.begin() + static_cast<std::ptrdiff_t>(std::min(from, errors_.size())),
                                  errors_.end());
  // Stable: two errors at one position stay in the order validation found them.
  std::stable_sort(sorted.begin(), sorted.end(), [](const ConfigError& a, const ConfigError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  return sorted;
}

std::string ConfigErrors::Format(const ConfigError& error) const {
  std::string out = file_name_;
  if (error.line > 0) absl::StrAppendFormat(&out, ":%d:%d", error.line, error.column);
  out += ": ";
  if (!error.path.empty()) absl::StrAppendFormat(&out, "%s: ", error.path);
  out += error.message;
  return out;
}

absl::Status ConfigErrors::ToStatus(size_t from) const {
  std::vector<ConfigError> sorted = Sorted(from);
  if (sorted.empty()) return absl::OkStatus();
  std::vector<std::string> lines;
  lines.reserve(sorted.size());
  for (const ConfigError& e : sorted) lines.push_back(Format(e));
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

std::string JoinPath(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  if (key.empty()) return std::string(prefix);
  return absl::StrFormat("%s.%s", prefix, key);
}

}  // namespace tessera
