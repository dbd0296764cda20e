#include "scheduler/common/yaml_map.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace tessera::yaml_internal {

std::string Describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  // Escaped, so a stray control character cannot break the one-error-per-line output.
  return absl::StrFormat("\"%s\"", absl::Utf8SafeCEscape(node.Scalar()));
}

bool IsDecimalInteger(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::optional<int64_t> ParseInteger(const YAML::Node& node) {
  int64_t value = 0;
  if (!node.IsScalar() || !IsDecimalInteger(node.Scalar()) || !absl::SimpleAtoi(node.Scalar(), &value)) {
    return std::nullopt;
  }
  return value;
}

YamlMap::YamlMap(const YAML::Node& node, std::string path, ConfigErrors& errors)
    : path_(std::move(path)) {
  // By value: yaml-cpp's iterator hands out a proxy, and references into it
  // dangle (GCC 12 rightly says so).
  for (YAML::const_iterator::value_type pair : node) {
    const YAML::Node key = pair.first;
    if (!key.IsScalar()) {
      errors.Add(key.Mark(), path_, absl::StrFormat("field names must be strings; got %s", Describe(key)));
      continue;
    }
    if (Peek(key.Scalar()) != nullptr) {
      errors.Add(key.Mark(), JoinPath(path_, key.Scalar()), "duplicate field");
      continue;
    }
    fields_.push_back(Field{key.Scalar(), key, pair.second, false});
  }
}

const YamlMap::Field* YamlMap::Read(std::string_view key) {
  for (Field& f : fields_) {
    if (f.key == key) {
      f.read = true;
      return &f;
    }
  }
  return nullptr;
}

const YamlMap::Field* YamlMap::Peek(std::string_view key) const {
  for (const Field& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

void YamlMap::ReportUnread(ConfigErrors& errors) {
  for (Field& f : fields_) {
    if (!f.read) errors.Add(f.key_node.Mark(), JoinPath(path_, f.key), "unknown field");
    f.read = true;
  }
}

}  // namespace tessera::yaml_internal
