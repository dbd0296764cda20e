// Reading one map of a policy file's sections with positioned errors: what
// the telemetry, tenants, pools, workloadLearning and shortlist sections share.
//
// Every getter also takes the field's one-line documentation and records what
// it was asked (key, type, range, default, doc) in described(), as PluginArgs
// does for a plugin's args: reading a section on an empty document is how
// docs/reference/policy-file.md documents it (config/policy_reference.h), so
// the reference cannot drift from the getters. A getter's default is the value
// `out` holds when it is called.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "scheduler/common/config_errors.h"
#include "scheduler/common/yaml_map.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/model/quantity_parse.h"
#include "yaml-cpp/yaml.h"

namespace tessera::config_internal {

using yaml_internal::Describe;
using yaml_internal::ParseInteger;
using yaml_internal::YamlMap;

// A field's value's position; its key's when the value is null (yaml-cpp
// places a null at the next token, possibly lines later); the enclosing
// map's when the field is absent.
inline YAML::Mark MarkOr(const YamlMap::Field* field, const YAML::Node& parent) {
  if (field == nullptr) return parent.Mark();
  if (field->value.IsNull() || field->value.Mark().is_null()) return field->key_node.Mark();
  return field->value.Mark();
}

// Reads one map of a section; every problem goes to `errors` and the field
// keeps its default.
class SectionReader {
 public:
  // `field` must hold a map (checked here: nullopt and an error otherwise).
  static std::optional<SectionReader> Open(const YamlMap::Field& field, const YAML::Node& parent,
                                           std::string path, ConfigErrors& errors) {
    return Open(field, parent, std::move(path), errors, Descriptions{});
  }

  // An empty map whose reading only declares fields, for the reference: its
  // errors (a required field is absent) go nowhere, and a nested map that is
  // absent is read as an empty one so that its fields are declared too.
  static SectionReader ForDescription() {
    auto errors = std::make_shared<ConfigErrors>("");
    SectionReader reader(YAML::Node(YAML::NodeType::Map), YAML::Mark::null_mark(), "", *errors,
                         Descriptions{.list = std::make_shared<std::vector<ArgDescription>>(),
                                      .key_prefix = "",
                                      .absent_maps_read_empty = true});
    reader.owned_errors_ = std::move(errors);
    return reader;
  }

  SectionReader(const SectionReader&) = delete;
  SectionReader(SectionReader&&) = default;
  ~SectionReader() { map_.ReportUnread(errors_); }

  // A string; `allow_empty` lets "" switch a query off.
  void String(std::string_view key, bool allow_empty, std::string& out, std::string_view doc) {
    // An empty default is one a file can write only where "" is allowed; elsewhere there is none.
    Declare(key, "string", allow_empty ? "" : "non-empty", allow_empty && out.empty() ? "\"\"" : out, doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    if (!f->value.IsScalar() || (!allow_empty && f->value.Scalar().empty())) {
      Error(*f, key, absl::StrFormat("must be a%s string; got %s", allow_empty ? "" : " non-empty", Describe(f->value)));
      return;
    }
    out = f->value.Scalar();
  }

  // A Prometheus label name.
  void LabelName(std::string_view key, std::string& out, std::string_view doc) {
    Declare(key, "label name", "a letter or _, then letters, digits or _", out, doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    const bool valid = f->value.IsScalar() && !f->value.Scalar().empty() &&
                       !absl::ascii_isdigit(static_cast<unsigned char>(f->value.Scalar()[0])) &&
                       f->value.Scalar().find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
    if (!valid) {
      Error(*f, key, absl::StrFormat("must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*); got %s",
                                     Describe(f->value)));
      return;
    }
    out = f->value.Scalar();
  }

  // A duration such as "15s", "3m", "1m30s", "500ms", within [min, max].
  void Duration(std::string_view key, absl::Duration min, absl::Duration max, absl::Duration& out,
                std::string_view doc) {
    // An infinite default (no limit) is no duration a file can write: none is shown.
    Declare(key, "duration", absl::StrFormat("%s..%s", absl::FormatDuration(min), absl::FormatDuration(max)),
            out == absl::InfiniteDuration() ? "" : absl::FormatDuration(out), doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    absl::Duration d;
    if (!f->value.IsScalar() || !absl::ParseDuration(f->value.Scalar(), &d) || d < min || d > max) {
      Error(*f, key, absl::StrFormat("must be a duration in %s..%s such as \"15s\" or \"3m\"; got %s",
                                     absl::FormatDuration(min), absl::FormatDuration(max), Describe(f->value)));
      return;
    }
    out = d;
  }

  // An integer within [min, max].
  void Integer(std::string_view key, int64_t min, int64_t max, int64_t& out, std::string_view doc) {
    Declare(key, "integer", absl::StrFormat("%d..%d", min, max), IsUnlimited(out) ? "" : absl::StrFormat("%d", out),
            doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    std::optional<int64_t> v = ParseInteger(f->value);
    if (!v.has_value() || *v < min || *v > max) {
      Error(*f, key, absl::StrFormat("must be an integer in %d..%d; got %s", min, max, Describe(f->value)));
      return;
    }
    out = *v;
  }

  // A Kubernetes memory quantity ("80Gi"), in MiB rounded up.
  void Memory(std::string_view key, MemoryMiB& out, std::string_view doc) {
    // Unlike a plugin's memory arg, a bare number is bytes here (the quantity's own reading).
    Declare(key, "memory", "quantity (80Gi, 512Mi; a bare number is bytes, rounded up to MiB)",
            IsUnlimited(out.value()) ? "" : absl::StrFormat("%dMi", out.value()), doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    absl::StatusOr<MemoryMiB> v = f->value.IsScalar() ? k8s::ParseMemoryQuantity(f->value.Scalar())
                                                      : absl::InvalidArgumentError("not a scalar");
    if (!v.ok()) {
      Error(*f, key, absl::StrFormat("must be a memory quantity such as \"80Gi\"; got %s", Describe(f->value)));
      return;
    }
    out = *v;
  }

  // A list of non-empty strings; each item's position goes to `marks`.
  void StringList(std::string_view key, std::vector<std::string>& out, std::string_view doc,
                  std::vector<YAML::Mark>* marks = nullptr) {
    Declare(key, "list of strings", "non-empty strings", "", doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    if (!f->value.IsSequence()) {
      Error(*f, key, absl::StrFormat("must be a list of strings; got %s", Describe(f->value)));
      return;
    }
    for (size_t i = 0; i < f->value.size(); ++i) {
      const YAML::Node item = f->value[i];
      if (!item.IsScalar() || item.Scalar().empty()) {
        errors_.Add(item.Mark(), absl::StrFormat("%s[%d]", JoinPath(map_.path(), key), i),
                    absl::StrFormat("must be a non-empty string; got %s", Describe(item)));
        continue;
      }
      out.push_back(item.Scalar());
      if (marks != nullptr) marks->push_back(item.Mark());
    }
  }

  void Bool(std::string_view key, bool& out, std::string_view doc) {
    Declare(key, "boolean", "", out ? "true" : "false", doc);
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) return;
    const std::string text = f->value.IsScalar() ? absl::AsciiStrToLower(f->value.Scalar()) : "";
    if (text != "true" && text != "false") {
      Error(*f, key, absl::StrFormat("must be true or false; got %s", Describe(f->value)));
      return;
    }
    out = text == "true";
  }

  // A nested map; nullopt when absent, null-free and not a map (error recorded).
  // Its fields are declared as `key.field`.
  std::optional<SectionReader> Map(std::string_view key, std::string_view doc) {
    Declare(key, "map", "", "", doc);
    const std::string path = JoinPath(map_.path(), key);
    Descriptions nested{.list = described_.list,
                        .key_prefix = described_.key_prefix + std::string(key) + ".",
                        .absent_maps_read_empty = described_.absent_maps_read_empty};
    const YamlMap::Field* f = Read(key);
    if (f == nullptr) {
      if (!described_.absent_maps_read_empty) return std::nullopt;
      return SectionReader(YAML::Node(YAML::NodeType::Map), mark_, path, errors_, std::move(nested));
    }
    return Open(*f, node_, path, errors_, std::move(nested));
  }

  // The field `key` as it is, for a caller that reads it itself (a pool's
  // plugins), declared as of `type`; nullptr when absent or null.
  const YamlMap::Field* Field(std::string_view key, std::string_view type, std::string_view doc) {
    Declare(key, type, "", "", doc);
    return Read(key);
  }

  // The value's position of `key`, or the map's when absent.
  [[nodiscard]] YAML::Mark MarkOf(std::string_view key) const { return MarkOr(map_.Peek(key), node_); }
  void ErrorAt(std::string_view key, std::string message) {
    errors_.Add(map_.Peek(key) != nullptr ? MarkOf(key) : mark_, JoinPath(map_.path(), key), std::move(message));
  }
  [[nodiscard]] const std::string& path() const { return map_.path(); }
  [[nodiscard]] ConfigErrors& errors() { return errors_; }
  [[nodiscard]] bool Has(std::string_view key) const {
    const YamlMap::Field* f = map_.Peek(key);
    return f != nullptr && !f->value.IsNull();
  }

  // Every field a getter declared so far, nested maps' included ("prometheus.url"),
  // in the order asked, each once. A nested reader shares its parent's list.
  [[nodiscard]] const std::vector<ArgDescription>& described() const { return *described_.list; }

 private:
  // Where declarations go, and how a nested map's keys are named there.
  struct Descriptions {
    std::shared_ptr<std::vector<ArgDescription>> list = std::make_shared<std::vector<ArgDescription>>();
    std::string key_prefix;  // "prometheus.labels." for the map at telemetry.prometheus.labels
    bool absent_maps_read_empty = false;  // ForDescription()'s readers
  };

  static std::optional<SectionReader> Open(const YamlMap::Field& field, const YAML::Node& parent, std::string path,
                                           ConfigErrors& errors, Descriptions described) {
    if (field.value.IsNull()) {
      return SectionReader(YAML::Node(YAML::NodeType::Map), MarkOr(&field, parent), path, errors,
                           std::move(described));
    }
    if (!field.value.IsMap()) {
      errors.Add(field.value.Mark(), path, absl::StrFormat("must be a map; got %s", Describe(field.value)));
      return std::nullopt;
    }
    return SectionReader(field.value, field.value.Mark(), std::move(path), errors, std::move(described));
  }

  SectionReader(YAML::Node node, YAML::Mark mark, std::string path, ConfigErrors& errors, Descriptions described)
      : node_(node), mark_(mark), map_(node, std::move(path), errors), errors_(errors),
        described_(std::move(described)) {}

  // GpuQuota::kUnlimited and its like: a default of "no limit", which no file
  // can write as a number, so none is shown.
  static bool IsUnlimited(int64_t value) { return value == std::numeric_limits<int64_t>::max(); }

  // Records a getter's declaration (the first one per key).
  void Declare(std::string_view key, std::string_view type, std::string allowed, std::string default_value,
               std::string_view doc) {
    std::string full_key = described_.key_prefix + std::string(key);
    for (const ArgDescription& d : *described_.list) {
      if (d.key == full_key) return;
    }
    described_.list->push_back(ArgDescription{.key = std::move(full_key),
                                              .type = std::string(type),
                                              .allowed = std::move(allowed),
                                              .default_value = std::move(default_value),
                                              .doc = std::string(doc)});
  }

  // The field `key` with a non-null value (a null one takes the default).
  const YamlMap::Field* Read(std::string_view key) {
    const YamlMap::Field* f = map_.Read(key);
    return f == nullptr || f->value.IsNull() ? nullptr : f;
  }
  void Error(const YamlMap::Field& f, std::string_view key, std::string message) {
    errors_.Add(f.value.Mark(), JoinPath(map_.path(), key), std::move(message));
  }

  YAML::Node node_;
  YAML::Mark mark_;
  YamlMap map_;
  ConfigErrors& errors_;
  Descriptions described_;
  // ForDescription()'s own error list, which `errors_` refers to.
  std::shared_ptr<ConfigErrors> owned_errors_;
};

}  // namespace tessera::config_internal
