// The Helm chart rendered for tests, split into the Kubernetes objects a
// `helm install` would apply.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"
#include "test/k8s/helm/helm_template.h"

namespace tessera::deploy {

inline const std::string kChartDir = std::string(TESSERA_SOURCE_DIR) + "/k8s/helm/tessera";
inline constexpr std::string_view kTesseraImage = "registry.example.com/tessera-extender";

struct Manifests {
  std::vector<YAML::Node> objects;
  std::string notes;

  [[nodiscard]] std::vector<YAML::Node> All(std::string_view kind) const {
    std::vector<YAML::Node> out;
    for (const YAML::Node& o : objects) {
      if (o["kind"].as<std::string>() == kind) out.push_back(o);
    }
    return out;
  }
  /// The one object of `kind` whose name ends with `suffix`; a test failure
  /// and a null node when there is not exactly one.
  [[nodiscard]] YAML::Node One(std::string_view kind, std::string_view suffix = "") const {
    std::vector<YAML::Node> found;
    for (const YAML::Node& o : All(kind)) {
      if (absl::EndsWith(o["metadata"]["name"].as<std::string>(), Absl(suffix))) found.push_back(o);
    }
    EXPECT_EQ(found.size(), 1u) << kind << " named *" << suffix;
    return found.size() == 1 ? found.front() : YAML::Node(YAML::NodeType::Null);
  }
};

/// Renders the chart with values.yaml, the image repository an installer must
/// give, and `overrides` (YAML, as a --values file), then parses every manifest.
inline absl::StatusOr<Manifests> RenderChart(std::string_view overrides = "", const Release& release = {}) {
  absl::StatusOr<HelmChart> chart = HelmChart::Load(kChartDir);
  if (!chart.ok()) return chart.status();
  const YAML::Node image = YAML::Load(absl::StrCat("tessera: {image: {repository: ", Absl(kTesseraImage), "}}"));
  const YAML::Node values = overrides.empty() ? image : MergeValues(image, YAML::Load(std::string(overrides)));
  absl::StatusOr<RenderedChart> rendered = chart->Render(values, release);
  if (!rendered.ok()) return rendered.status();
  Manifests m;
  for (const auto& [path, text] : *rendered) {
    if (absl::EndsWith(path, "NOTES.txt")) {
      m.notes = text;
      continue;
    }
    try {
      for (const YAML::Node& doc : YAML::LoadAll(text)) {
        if (doc.IsNull()) continue;
        if (!doc.IsMap() || !doc["kind"] || !doc["apiVersion"] || !doc["metadata"]["name"]) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": a document without apiVersion, kind and metadata.name"));
        }
        m.objects.push_back(doc);
      }
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(path, " renders to invalid YAML: ", e.what(), "\n", text));
    }
  }
  return m;
}

/// The container of a Deployment named `name`; null when there is none.
inline YAML::Node Container(const YAML::Node& deployment, std::string_view name) {
  for (const YAML::Node& c : deployment["spec"]["template"]["spec"]["containers"]) {
    if (c["name"].as<std::string>() == name) return c;
  }
  ADD_FAILURE() << "no container " << name;
  return YAML::Node(YAML::NodeType::Null);
}

/// The value of `--flag=value` among a container's args.
inline std::optional<std::string> FlagValue(const YAML::Node& container, std::string_view flag) {
  const std::string prefix = absl::StrCat(Absl(flag), "=");
  for (const YAML::Node& arg : container["args"]) {
    const std::string a = arg.as<std::string>();
    if (absl::StartsWith(a, prefix)) return a.substr(prefix.size());
  }
  return std::nullopt;
}

}  // namespace tessera::deploy
