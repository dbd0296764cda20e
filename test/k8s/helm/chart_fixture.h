// The Helm chart rendered for tests by the real Helm (`helm template`, see
// helm_cli.h), split into the Kubernetes objects a `helm install` would apply.
// Chart tests derive their fixtures from ChartTest, which skips them without
// helm (fails them with CI=true).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"
#include "test/k8s/helm/helm_cli.h"

namespace tessera::deploy {

inline const std::string kChartDir = std::string(TESSERA_SOURCE_DIR) + "/k8s/helm/tessera";
inline constexpr std::string_view kTesseraImage = "registry.example.com/tessera-extender";

/// The release and the cluster `helm template` renders for.
struct Release {
  std::string name = "tessera";
  std::string namespace_name = "tessera-system";
  /// What .Capabilities.APIVersions.Has answers yes to besides Helm's
  /// built-in list (--api-versions): by default a cluster with cert-manager.
  std::vector<std::string> api_versions = {"cert-manager.io/v1"};
  /// .Capabilities.KubeVersion (--kube-version); empty: Helm's default.
  std::string kube_version = {};

  auto operator<=>(const Release&) const = default;
};

struct Manifests {
  std::vector<YAML::Node> objects;

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

/// A `helm` command line that renders the chart for `release` with
/// values.yaml, then `base` (the installer's image), then `overrides`, each a
/// --values file.
inline std::vector<std::string> HelmRenderArgs(std::string_view command, const Release& release,
                                               const ScratchFile& base, const ScratchFile* overrides) {
  std::vector<std::string> args{std::string(command), release.name, kChartDir, "--namespace", release.namespace_name,
                                "--values", base.path()};
  if (overrides != nullptr) args.insert(args.end(), {"--values", overrides->path()});
  return args;
}

/// What `helm <args>` printed on success; its error output as an
/// InvalidArgument status otherwise (e.g. a schema violation or a `fail`).
inline absl::StatusOr<std::string> RunHelm(const std::vector<std::string>& args) {
  if (const std::string missing = MissingHelm(); !missing.empty()) return absl::FailedPreconditionError(missing);
  const ProgramResult r = RunProgram(HelmBinary(), args);
  if (r.exit_code != 0) return absl::InvalidArgumentError(absl::StrCat("helm ", args[0], ": ", r.err, r.out));
  return r.out;
}

/// What `helm template` prints for the chart with the installer's image and
/// `overrides` (YAML, as a --values file). One helm run per value set and
/// release in a process: tests render the defaults many times.
inline absl::StatusOr<std::string> HelmTemplate(std::string_view overrides = "", const Release& release = {}) {
  static std::map<std::tuple<std::string, Release>, absl::StatusOr<std::string>> rendered;
  const auto key = std::make_tuple(std::string(overrides), release);
  if (auto it = rendered.find(key); it != rendered.end()) return it->second;
  const ScratchFile base(absl::StrCat("tessera: {image: {repository: ", Absl(kTesseraImage), "}}\n"));
  std::optional<ScratchFile> more;
  if (!overrides.empty()) more.emplace(std::string(overrides));
  std::vector<std::string> args = HelmRenderArgs("template", release, base, more ? &*more : nullptr);
  for (const std::string& v : release.api_versions) args.insert(args.end(), {"--api-versions", v});
  if (!release.kube_version.empty()) args.insert(args.end(), {"--kube-version", release.kube_version});
  return rendered.emplace(key, RunHelm(args)).first->second;
}

/// The chart rendered by HelmTemplate, every document parsed (afresh on each
/// call: a test may change what it gets).
inline absl::StatusOr<Manifests> RenderChart(std::string_view overrides = "", const Release& release = {}) {
  const absl::StatusOr<std::string> text = HelmTemplate(overrides, release);
  if (!text.ok()) return text.status();
  Manifests m;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(*text)) {
      if (doc.IsNull()) continue;
      if (!doc.IsMap() || !doc["kind"] || !doc["apiVersion"] || !doc["metadata"]["name"]) {
        return absl::InvalidArgumentError(absl::StrCat("a document without apiVersion, kind and metadata.name:\n", *text));
      }
      m.objects.push_back(doc);
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("helm template printed invalid YAML: ", e.what(), "\n", *text));
  }
  return m;
}

/// NOTES.txt as `helm install` prints it after installing (`helm template`
/// leaves it out): a client-side dry run, so Helm's default capabilities.
inline absl::StatusOr<std::string> RenderNotes(std::string_view overrides = "", const Release& release = {}) {
  const ScratchFile base(absl::StrCat("tessera: {image: {repository: ", Absl(kTesseraImage), "}}\n"));
  std::optional<ScratchFile> more;
  if (!overrides.empty()) more.emplace(std::string(overrides));
  std::vector<std::string> args = HelmRenderArgs("install", release, base, more ? &*more : nullptr);
  args.insert(args.end(), {"--dry-run=client", "--output", "json"});
  const absl::StatusOr<std::string> text = RunHelm(args);
  if (!text.ok()) return text.status();
  const nlohmann::json release_json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!release_json.contains("info")) return absl::InvalidArgumentError(absl::StrCat("no release in:\n", *text));
  return release_json["info"].value("notes", "");
}

/// The fixture of every test that renders the chart.
class ChartTest : public ::testing::Test {
 protected:
  void SetUp() override { TESSERA_REQUIRE_HELM(); }
};

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
