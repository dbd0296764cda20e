#include "scheduler/framework/plugin_args.h"

#include <algorithm>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "scheduler/common/yaml_load.h"
#include "scheduler/model/quantity_parse.h"

namespace tessera {
namespace {

using yaml_internal::Describe;
using yaml_internal::IsDecimalInteger;
using yaml_internal::ParseInteger;
using yaml_internal::YamlMap;

// The same ceiling k8s::ParseMemoryQuantity applies to quantity strings.
constexpr int64_t kMaxMemoryMiB = int64_t{1} << 40;

// absl::StrJoin would need Debian abseil's own string_view; this is shorter.
std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

PluginArgs::PluginArgs(YAML::Node args, YAML::Mark fallback, std::string path,
                       std::shared_ptr<ConfigErrors> errors)
    : errors_(std::move(errors)),
      first_error_(errors_->size()),
      path_(std::move(path)),
      args_(std::move(args)),
      fallback_(fallback) {
  if (!args_.IsDefined() || args_.IsNull()) return;
  if (!args_.IsMap()) {
    errors_->Add(args_.Mark(), path_, absl::StrFormat("must be a map; got %s", Describe(args_)));
    return;
  }
  map_ = YamlMap(args_, path_, *errors_);
}

absl::StatusOr<PluginArgs> PluginArgs::FromText(std::string_view yaml, std::string_view file_name) {
  auto errors = std::make_shared<ConfigErrors>(std::string(file_name));
  yaml_internal::YamlDocuments parsed = yaml_internal::LoadYamlDocuments(yaml);
  if (parsed.error) {
    errors->Add(parsed.error->mark, "", absl::StrFormat("invalid YAML: %s", parsed.error->message));
    return errors->ToStatus();
  }
  const YAML::Node node = parsed.documents.empty() ? YAML::Node() : parsed.documents[0];
  return PluginArgs(node, YAML::Mark::null_mark(), "args", std::move(errors));
}

const YamlMap::Field* PluginArgs::Lookup(std::string_view key) {
  const YamlMap::Field* field = map_.Read(key);
  if (field == nullptr || field->value.IsNull()) return nullptr;
  return field;
}

YAML::Mark PluginArgs::HomeMark() const {
  // A null `args:` has no useful position of its own (yaml-cpp puts it at the next token).
  return args_.IsDefined() && !args_.IsNull() && !args_.Mark().is_null() ? args_.Mark() : fallback_;
}

void PluginArgs::AddError(const YAML::Node& at, std::string_view key, std::string message) {
  AddErrorAt(at.IsDefined() && !at.Mark().is_null() ? at.Mark() : HomeMark(), key, std::move(message));
}

void PluginArgs::AddErrorAt(const YAML::Mark& mark, std::string_view key, std::string message) {
  errors_->Add(mark, JoinPath(path_, key), std::move(message));
}

void PluginArgs::Declare(ArgDescription description) {
  for (const ArgDescription& d : described_) {
    if (d.key == description.key) return;
  }
  described_.push_back(std::move(description));
}

std::string PluginArgs::Enum(std::string_view key, std::vector<std::string_view> allowed,
                             std::string_view default_value, std::string_view doc) {
  Declare({std::string(key), "one of", JoinNames(allowed), std::string(default_value), std::string(doc)});
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return std::string(default_value);
  if (field->value.IsScalar()) {
    for (std::string_view a : allowed) {
      if (field->value.Scalar() == a) return std::string(a);
    }
  }
  AddError(field->value, key,
           absl::StrFormat("must be one of %s; got %s", JoinNames(allowed),
                           Describe(field->value)));
  return std::string(default_value);
}

int64_t PluginArgs::Int(std::string_view key, int64_t min, int64_t max, int64_t default_value,
                        std::string_view doc) {
  Declare({std::string(key), "integer", absl::StrFormat("%d..%d", min, max), absl::StrFormat("%d", default_value),
            std::string(doc)});
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return default_value;
  std::optional<int64_t> value = ParseInteger(field->value);
  if (!value.has_value()) {
    AddError(field->value, key,
             absl::StrFormat("must be an integer in %d..%d; got %s", min, max, Describe(field->value)));
    return default_value;
  }
  if (*value < min || *value > max) {
    AddError(field->value, key, absl::StrFormat("must be an integer in %d..%d; got %d", min, max, *value));
    return default_value;
  }
  return *value;
}

bool PluginArgs::Bool(std::string_view key, bool default_value, std::string_view doc) {
  Declare({std::string(key), "boolean", "", default_value ? "true" : "false", std::string(doc)});
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return default_value;
  if (field->value.IsScalar()) {
    const std::string& s = field->value.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  AddError(field->value, key, absl::StrFormat("must be true or false; got %s", Describe(field->value)));
  return default_value;
}

MemoryMiB PluginArgs::Memory(std::string_view key, MemoryMiB default_value, std::string_view doc) {
  Declare({std::string(key), "memory", "quantity (512Mi, 1Gi) or whole MiB",
            absl::StrFormat("%dMi", default_value.value()), std::string(doc)});
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return default_value;
  const YAML::Node& value = field->value;
  constexpr std::string_view kExpected =
      "must be a memory quantity such as 512Mi or 1Gi, or a whole number of MiB";
  if (!value.IsScalar()) {
    AddError(value, key, absl::StrFormat("%s; got %s", kExpected, Describe(value)));
    return default_value;
  }
  const std::string& text = value.Scalar();
  // A bare integer means MiB here (ParseMemoryQuantity would read bytes):
  // `gpuMemoryReserve: 256` meaning 256 bytes would never be what was meant.
  if (IsDecimalInteger(text) && text.front() != '-') {
    int64_t mib = 0;
    if (!absl::SimpleAtoi(text, &mib) || mib > kMaxMemoryMiB) {
      AddError(value, key, absl::StrFormat("must be at most %d MiB; got %s", kMaxMemoryMiB, Describe(value)));
      return default_value;
    }
    return MemoryMiB(mib);
  }
  absl::StatusOr<MemoryMiB> parsed = k8s::ParseMemoryQuantity(text);
  if (!parsed.ok()) {
    AddError(value, key,
             absl::StrFormat("%s; got %s: %s", kExpected, Describe(value), parsed.status().message()));
    return default_value;
  }
  return *parsed;
}

std::vector<std::string> PluginArgs::StringList(std::string_view key, std::string_view doc) {
  Declare({std::string(key), "list of strings", "", "", std::string(doc)});
  std::vector<std::string> out;
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return out;
  const YAML::Node& value = field->value;
  if (!value.IsSequence()) {
    AddError(value, key, absl::StrFormat("must be a list of strings; got %s", Describe(value)));
    return out;
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const YAML::Node item = value[i];
    if (!item.IsScalar()) {
      AddError(item, absl::StrFormat("%s[%d]", key, i),
               absl::StrFormat("must be a string; got %s", Describe(item)));
      continue;
    }
    out.push_back(item.Scalar());
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> PluginArgs::IntMap(std::string_view key, int64_t min, int64_t max,
                                                                std::string_view doc) {
  Declare({std::string(key), "map of names to integers", absl::StrFormat("%d..%d", min, max), "",
            std::string(doc)});
  std::vector<std::pair<std::string, int64_t>> out;
  const YamlMap::Field* field = Lookup(key);
  if (field == nullptr) return out;
  const YAML::Node& value = field->value;
  if (!value.IsMap()) {
    AddError(value, key, absl::StrFormat("must be a map of names to integers; got %s", Describe(value)));
    return out;
  }
  for (const auto& entry : value) {
    const YAML::Node& name = entry.first;
    if (!name.IsScalar() || name.Scalar().empty()) {
      AddError(name, key, "names must be non-empty strings");
      continue;
    }
    const std::string at = absl::StrFormat("%s.%s", key, name.Scalar());
    if (std::any_of(out.begin(), out.end(), [&](const auto& kv) { return kv.first == name.Scalar(); })) {
      AddError(name, at, "duplicate field");
      continue;
    }
    const std::optional<int64_t> n = ParseInteger(entry.second);
    if (!n.has_value() || *n < min || *n > max) {
      AddError(entry.second, at, absl::StrFormat("must be an integer in %d..%d; got %s", min, max, Describe(entry.second)));
      continue;
    }
    out.emplace_back(name.Scalar(), *n);
  }
  return out;
}

void PluginArgs::Error(std::string_view key, std::string_view message) {
  const YamlMap::Field* field = key.empty() ? nullptr : map_.Read(key);
  if (field != nullptr) {
    AddError(field->value, key, std::string(message));
  } else {
    AddErrorAt(HomeMark(), key, std::string(message));
  }
}

bool PluginArgs::Has(std::string_view key) const {
  const YamlMap::Field* field = map_.Peek(key);
  return field != nullptr && !field->value.IsNull();
}

absl::Status PluginArgs::Finish() {
  if (!finished_) {
    map_.ReportUnread(*errors_);
    finished_ = true;
  }
  return errors_->ToStatus(first_error_);
}

}  // namespace tessera
