// Renders the Helm chart under k8s/helm/ without Helm, which CI cannot install,
// so tests can check the manifests a `helm install` would apply.
//
// It implements the part of Helm's template language (Go text/template plus
// Sprig functions) that the chart uses, with Helm's semantics:
//   - actions {{ pipeline }}, whitespace trimming {{- and -}}, comments {{/* */}};
//   - if / else if / else, with / else, range over a list, define, end;
//   - operands: . and $ with field chains (.Values.a.b, $.Release.Name),
//     "strings", integers, true/false, (sub-pipelines); pipes pass the value
//     as the last argument;
//   - functions: include required fail default empty quote toYaml indent
//     nindent trunc trimSuffix replace contains printf (%s %d %v) eq ne not
//     and or gt ge lt le int sha256sum.
// Anything else is an error naming the file and line, so a template that
// strays outside this subset fails the tests instead of rendering wrongly.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"

namespace tessera::deploy {

namespace helm {
struct ParsedTemplates;
}  // namespace helm

struct Release {
  std::string name = "tessera";
  std::string namespace_name = "tessera-system";
  /// What .Capabilities.APIVersions.Has answers yes to (helm template's
  /// --api-versions): by default a cluster with cert-manager.
  std::vector<std::string> api_versions = {"cert-manager.io/v1"};
};

/// The first line of a template only real Helm renders (it uses variables,
/// genCA or lookup): HelmChart skips it; test/k8s/helm/real_helm_test.cc renders it.
inline constexpr std::string_view kRealHelmOnlyMarker = "# tessera-chart: real Helm only";

/// Template path under the chart (e.g. "templates/deployment.yaml") -> rendered text.
using RenderedChart = std::map<std::string, std::string>;

class HelmChart {
 public:
  /// Reads Chart.yaml, values.yaml and every file in templates/, and parses
  /// the templates (syntax errors are reported here, with file and line).
  static absl::StatusOr<HelmChart> Load(const std::string& chart_dir);

  /// Renders every template but the `_*.tpl` helpers, with values.yaml merged
  /// with `overrides` (as `helm install --values`); NOTES.txt included.
  [[nodiscard]] absl::StatusOr<RenderedChart> Render(const YAML::Node& overrides, const Release& release = {}) const;

  /// values.yaml as read.
  [[nodiscard]] const YAML::Node& values() const { return values_; }
  /// The templates' sources, by path.
  [[nodiscard]] const std::map<std::string, std::string>& sources() const { return sources_; }
  /// The templates left to real Helm (kRealHelmOnlyMarker).
  [[nodiscard]] const std::vector<std::string>& real_helm_only() const { return real_helm_only_; }

 private:
  std::vector<std::string> real_helm_only_;
  YAML::Node chart_;
  YAML::Node values_;
  std::map<std::string, std::string> sources_;
  std::map<std::string, std::string> files_;  // .Files, by path in the chart
  std::shared_ptr<const helm::ParsedTemplates> parsed_;
};

/// A copy of `base` with `overrides` applied as Helm merges values files:
/// maps merge key by key, anything else replaces.
YAML::Node MergeValues(const YAML::Node& base, const YAML::Node& overrides);

/// Renders one template text against `values` (for tests of the renderer).
absl::StatusOr<std::string> RenderTemplateText(const std::string& text, const YAML::Node& values,
                                               const Release& release = {});

}  // namespace tessera::deploy
