// Runs parsed Helm templates with Helm's semantics (Go text/template truth
// and printing, Sprig's functions, values read as Helm reads them), for the
// part of the language helm_template.h lists.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "test/k8s/helm/helm_syntax.h"

namespace tessera::deploy::helm {

/// Renders `tree` with `.` and `$` both `root`; `include` finds `defines`.
absl::StatusOr<std::string> Execute(const std::vector<TemplateNode>& tree, const Defines& defines, const YAML::Node& root);

/// A string value, as a template sees "text".
YAML::Node StringValue(std::string s);
/// A Go boolean.
YAML::Node BoolValue(bool b);
/// Absent or null.
bool IsNil(const YAML::Node& n);
/// A map's value, or null when absent (never inserts into the map).
YAML::Node ChildOrNil(const YAML::Node& map, const std::string& key);

}  // namespace tessera::deploy::helm
