#include "test/k8s/helm/helm_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"
#include "test/k8s/helm/helm_eval.h"
#include "test/k8s/helm/helm_syntax.h"

namespace tessera::deploy {
namespace {

using helm::BoolValue;
using helm::ChildOrNil;
using helm::IsNil;
using helm::StringValue;

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What templates see as . at the top: .Values, .Release, .Chart, and .Files
// (the chart's files outside templates/, by path, for .Files.Get).
YAML::Node Root(const YAML::Node& values, const YAML::Node& chart, const Release& release,
                const std::map<std::string, std::string>& files = {}) {
  YAML::Node root(YAML::NodeType::Map);
  root["Files"] = YAML::Node(YAML::NodeType::Map);
  for (const auto& [path, text] : files) root["Files"][path] = StringValue(text);
  root["Values"] = values;
  root["Release"]["Name"] = StringValue(release.name);
  root["Release"]["Namespace"] = StringValue(release.namespace_name);
  root["Release"]["Service"] = StringValue("Helm");
  root["Release"]["IsInstall"] = BoolValue(true);
  root["Capabilities"]["APIVersions"] = YAML::Node(YAML::NodeType::Sequence);
  for (const std::string& v : release.api_versions) root["Capabilities"]["APIVersions"].push_back(StringValue(v));
  root["Chart"]["Name"] = ChildOrNil(chart, "name");
  root["Chart"]["Version"] = ChildOrNil(chart, "version");
  root["Chart"]["AppVersion"] = ChildOrNil(chart, "appVersion");
  return root;
}

}  // namespace

YAML::Node MergeValues(const YAML::Node& base, const YAML::Node& overrides) {
  if (IsNil(overrides)) return IsNil(base) ? YAML::Node(YAML::NodeType::Null) : YAML::Clone(base);
  if (IsNil(base) || !base.IsMap() || !overrides.IsMap()) return YAML::Clone(overrides);
  YAML::Node out = YAML::Clone(base);
  for (auto kv : overrides) {
    const std::string key = kv.first.Scalar();
    out[key] = MergeValues(ChildOrNil(base, key), kv.second);
  }
  return out;
}

absl::StatusOr<HelmChart> HelmChart::Load(const std::string& chart_dir) {
  HelmChart chart;
  try {
    chart.chart_ = YAML::LoadFile(chart_dir + "/Chart.yaml");
    chart.values_ = YAML::LoadFile(chart_dir + "/values.yaml");
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(chart_dir, ": ", e.what()));
  }
  auto parsed = std::make_shared<helm::ParsedTemplates>();
  std::error_code ec;
  const std::filesystem::path templates = std::filesystem::path(chart_dir) / "templates";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(templates, ec)) {
    if (!entry.is_regular_file()) continue;
    absl::StatusOr<std::string> source = ReadFile(entry.path());
    if (!source.ok()) return source.status();
    const std::string path = std::filesystem::relative(entry.path(), chart_dir).generic_string();
    // Templates that need what this renderer lacks (variables, genCA, lookup)
    // say so on their first line; real Helm renders them (real_helm_test.cc).
    if (absl::StartsWith(*source, Absl(kRealHelmOnlyMarker))) {
      chart.real_helm_only_.push_back(path);
      continue;
    }
    chart.sources_[path] = *source;
  }
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list ", templates.string(), ": ", ec.message()));
  // Files a template may read with .Files.Get (Helm's .Files: everything
  // outside templates/; only what the chart ships in folders of its own).
  for (const auto& entry : std::filesystem::recursive_directory_iterator(chart_dir, ec)) {
    const std::string path = std::filesystem::relative(entry.path(), chart_dir).generic_string();
    if (!entry.is_regular_file() || absl::StartsWith(path, "templates/") || !absl::StrContains(path, "/")) continue;
    absl::StatusOr<std::string> text = ReadFile(entry.path());
    if (!text.ok()) return text.status();
    chart.files_[path] = *std::move(text);
  }
  for (const auto& [path, source] : chart.sources_) {
    if (absl::Status st = helm::ParseTemplate(path, source, *parsed); !st.ok()) return st;
  }
  chart.parsed_ = std::move(parsed);
  return chart;
}

absl::StatusOr<RenderedChart> HelmChart::Render(const YAML::Node& overrides, const Release& release) const {
  const YAML::Node root = Root(MergeValues(values_, overrides), chart_, release, files_);
  RenderedChart rendered;
  for (const auto& [path, tree] : parsed_->trees) {
    // Helpers (_*.tpl) only define templates; Helm renders no manifest from them.
    if (absl::StartsWith(std::filesystem::path(path).filename().string(), "_")) continue;
    absl::StatusOr<std::string> out = helm::Execute(tree, parsed_->defines, root);
    if (!out.ok()) return out.status();
    rendered[path] = *std::move(out);
  }
  return rendered;
}

absl::StatusOr<std::string> RenderTemplateText(const std::string& text, const YAML::Node& values,
                                               const Release& release) {
  helm::ParsedTemplates parsed;
  if (absl::Status st = helm::ParseTemplate("template", text, parsed); !st.ok()) return st;
  const YAML::Node chart = YAML::Load("{name: test, version: 1.0.0, appVersion: '1.0'}");
  const YAML::Node root = Root(MergeValues(YAML::Node(YAML::NodeType::Map), values), chart, release);
  return helm::Execute(parsed.trees["template"], parsed.defines, root);
}

}  // namespace tessera::deploy
