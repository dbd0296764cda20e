// Internal to config/: a YAML map as a list of fields that remembers which
// ones validation read, so the unread ones can be reported as unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/common/config_errors.h"
#include "yaml-cpp/yaml.h"

namespace tessera::yaml_internal {

/// How an error message shows a node the user wrote: a scalar as its quoted
/// text, a collection by its kind ("a map", "a list"), null as "null".
std::string Describe(const YAML::Node& node);

/// Whether `text` is a plain decimal integer: an optional '-', then digits
/// only. Stricter than absl::SimpleAtoi, which also takes "+5" and spaces.
bool IsDecimalInteger(std::string_view text);

/// The value of a scalar node holding a decimal integer that fits int64;
/// nullopt for anything else ("1.5", "abc", "0x10", a map).
std::optional<int64_t> ParseInteger(const YAML::Node& node);

/// The fields of one YAML map, in file order. Does not use Node::operator[]
/// (which may insert into the tree, and which silently takes the first of two
/// duplicate keys); duplicate and non-string keys are recorded as errors.
class YamlMap {
 public:
  struct Field {
    std::string key;
    YAML::Node key_node;  ///< For the position of "unknown field" errors.
    YAML::Node value;
    bool read = false;
  };

  YamlMap() = default;
  /// \param node a map node (callers check IsMap() first).
  /// \param path the map's field path, prefix of every key's path.
  YamlMap(const YAML::Node& node, std::string path, ConfigErrors& errors);

  /// The field named `key`, marked read; nullptr when absent.
  const Field* Read(std::string_view key);
  /// The field named `key` without marking it; nullptr when absent.
  [[nodiscard]] const Field* Peek(std::string_view key) const;
  /// Records "unknown field" for each field not read yet, then marks all read.
  void ReportUnread(ConfigErrors& errors);

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<Field> fields_;
};

}  // namespace tessera::yaml_internal
