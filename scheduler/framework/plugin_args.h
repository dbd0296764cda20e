// Typed, validating access to one plugin's `args` in a policy file.
//
// A plugin factory reads each of its args through a getter that states the
// arg's type, range and default. A bad value records an error (file, line,
// column and full field path) in the policy file's shared error list and the
// getter returns the default, so the factory carries on and every other arg is
// still checked: the user sees all mistakes at once. Finish() then flags the
// keys no getter asked for (typos such as `nodeStrategey`).
//
//   absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args) {
//     Args a;
//     a.strategy = args.Enum("nodeStrategy", {"binpack", "spread"}, "binpack");
//     a.percent = args.Int("maxLimitPercent", 100, 1000, 100);
//     if (absl::Status s = args.Finish(); !s.ok()) return s;
//     return std::make_unique<MyPlugin>(a);
//   }
//
// A missing key, and a key whose value is null (`key:` or `key: ~`), take the
// default.
//
// Every getter also takes the arg's one-line documentation and records what it
// was asked (key, type, range, default, doc) in described(): running a factory
// on empty args is how docs/reference/policy-file.md is generated from the code
// (config/policy_reference.h), so the reference cannot drift from the getters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/common/config_errors.h"
#include "scheduler/common/yaml_map.h"
#include "scheduler/model/quantity.h"
#include "yaml-cpp/yaml.h"

namespace tessera {

/// One arg as a factory's getter declared it: what the reference prints. A
/// policy file section's field is described the same way
/// (config/section_reader.h), its key dotted below a nested map ("prometheus.url").
struct ArgDescription {
  std::string key;
  std::string type;           ///< "integer", "boolean", "one of", "memory", "list of strings", "map of names to integers";
                              ///< a section's also "string", "duration", "label name", "map", "list of plugins"
  std::string allowed;        ///< "1..1000", "binpack, spread"; empty where any value of the type goes
  std::string default_value;  ///< as a policy file would write it; empty: none (an empty list or map; a section's
                              ///< required field, or one whose absence means no limit)
  std::string doc;            ///< one line: what the arg changes
};

class PluginArgs {
 public:
  /// The loader's constructor.
  /// \param args the plugin's `args` node; undefined or null means "all defaults";
  ///   anything but a map is recorded as an error.
  /// \param fallback where errors about absent keys point when `args` itself is
  ///   absent (the plugin's entry in the list).
  /// \param path field path of `args`, "plugins[0].args".
  /// \param errors the policy file's error list, shared by all plugins.
  PluginArgs(YAML::Node args, YAML::Mark fallback, std::string path,
             std::shared_ptr<ConfigErrors> errors);

  /// Args parsed from a YAML map in `yaml`, for testing a factory without a
  /// whole policy file ("nodeStrategy: spread"; empty text = all defaults).
  /// Errors then read `args.yaml:1:15: args.nodeStrategy: ...`.
  /// \return InvalidArgument when `yaml` is not valid YAML.
  static absl::StatusOr<PluginArgs> FromText(std::string_view yaml,
                                             std::string_view file_name = "args.yaml");

  PluginArgs(PluginArgs&&) = default;
  PluginArgs& operator=(PluginArgs&&) = default;

  /// One of `allowed` (case-sensitive), e.g. Enum("nodeStrategy", {"binpack", "spread"}, "binpack").
  std::string Enum(std::string_view key, std::vector<std::string_view> allowed,
                   std::string_view default_value, std::string_view doc);

  /// A decimal integer in [min, max]; "1.5", "abc" and out-of-range values are errors.
  int64_t Int(std::string_view key, int64_t min, int64_t max, int64_t default_value, std::string_view doc);

  /// `true` or `false` (also True/TRUE/False/FALSE). YAML 1.1's yes/no/on/off
  /// are errors: `nodeStrategy: no`-style surprises are not worth the brevity.
  bool Bool(std::string_view key, bool default_value, std::string_view doc);

  /// A Kubernetes memory quantity ("512Mi", "1Gi", "16G") or a plain
  /// non-negative integer, which means MiB (`256` = 256Mi, not 256 bytes).
  MemoryMiB Memory(std::string_view key, MemoryMiB default_value, std::string_view doc);

  /// A list of strings; absent or null is the empty list. A bad element is
  /// reported at its own path (`models[1]`) and left out.
  std::vector<std::string> StringList(std::string_view key, std::string_view doc);

  /// A map of names to integers in [min, max] ("1g.10gb: 50"), in file
  /// order; absent or null is empty. A bad entry is reported at its own path
  /// (`profileMix.1g.10gb`) and left out.
  std::vector<std::pair<std::string, int64_t>> IntMap(std::string_view key, int64_t min, int64_t max,
                                                      std::string_view doc);

  /// Records a factory's own error, e.g. a cross-field check, at `key`'s value
  /// (or at the args when `key` is absent; an empty `key` names the args
  /// themselves). Marks `key` as read.
  void Error(std::string_view key, std::string_view message);

  /// Whether `key` is present with a non-null value. Does not count as a read.
  [[nodiscard]] bool Has(std::string_view key) const;

  /// Records "unknown field" for every key no getter read (only the first
  /// call does; later calls just return the status again).
  /// \return OK when this plugin's args had no errors, else InvalidArgument
  ///   listing them, one per line.
  absl::Status Finish();

  /// Whether any error has been recorded for these args so far.
  [[nodiscard]] bool has_errors() const { return errors_->size() > first_error_; }

  /// Field path of the args, "plugins[0].args".
  [[nodiscard]] const std::string& path() const { return path_; }

  /// Every arg a getter asked for so far, in the order asked, each once.
  [[nodiscard]] const std::vector<ArgDescription>& described() const { return described_; }

 private:
  // The field `key` with a non-null value, marked read; nullptr when absent or null.
  const yaml_internal::YamlMap::Field* Lookup(std::string_view key);
  // Where an error about an absent key points.
  [[nodiscard]] YAML::Mark HomeMark() const;
  // Records an error at `at`'s position, or at HomeMark() when `at` has none.
  void AddError(const YAML::Node& at, std::string_view key, std::string message);
  void AddErrorAt(const YAML::Mark& mark, std::string_view key, std::string message);
  // Records a getter's declaration (the first one per key).
  void Declare(ArgDescription description);

  std::shared_ptr<ConfigErrors> errors_;
  // Errors from this index on belong to these args: the loader records
  // nothing else between building a PluginArgs and its factory returning.
  size_t first_error_ = 0;
  std::string path_;
  YAML::Node args_;
  YAML::Mark fallback_;
  yaml_internal::YamlMap map_;
  bool finished_ = false;
  std::vector<ArgDescription> described_;
};

}  // namespace tessera
