// The chart under real Helm (scripts/install-helm.sh puts helm v4 in
// .tools/bin; $TESSERA_HELM overrides): `helm lint` passes, and `helm
// template` renders exactly the objects the in-tree renderer does
// (helm_template.h), so the many chart tests that use the in-tree renderer
// test what Helm installs.
//
// Without helm the tests are skipped with the reason; with CI=true they fail
// instead, so CI cannot pass without having run them.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

std::string HelmBinary() {
  if (const char* env = std::getenv("TESSERA_HELM"); env != nullptr && *env != '\0') return env;
  return std::string(TESSERA_SOURCE_DIR) + "/.tools/bin/helm";
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Runs `command`, returns its standard output and its exit status.
std::pair<std::string, int> RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", -1};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

class RealHelmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::filesystem::exists(HelmBinary())) return;
    if (InCi()) FAIL() << "no helm at " << HelmBinary() << "; scripts/install-helm.sh installs it";
    GTEST_SKIP() << "no helm at " << HelmBinary() << " (scripts/install-helm.sh installs it)";
  }

  // `helm template` with the installer's image and `overrides` (a values file's text).
  std::multiset<std::string> HelmObjects(const std::string& overrides, const Release& release) {
    const std::filesystem::path values = std::filesystem::temp_directory_path() / "tessera-real-helm-values.yaml";
    {
      std::FILE* f = std::fopen(values.c_str(), "w");
      const std::string text = "tessera: {image: {repository: " + std::string(kTesseraImage) + "}}\n";
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
    const std::filesystem::path more = std::filesystem::temp_directory_path() / "tessera-real-helm-overrides.yaml";
    {
      std::FILE* f = std::fopen(more.c_str(), "w");
      std::fputs(overrides.c_str(), f);
      std::fclose(f);
    }
    const auto [text, status] = RunCommand(HelmBinary() + " template " + release.name + " " + kChartDir + " --namespace " +
                                    release.namespace_name + " -f " + values.string() + " -f " + more.string());
    EXPECT_EQ(status, 0) << text;
    std::multiset<std::string> objects;
    for (const YAML::Node& doc : YAML::LoadAll(text)) {
      if (doc.IsNull()) continue;
      objects.insert(YAML::Dump(doc));
    }
    return objects;
  }

  static std::multiset<std::string> OurObjects(const std::string& overrides, const Release& release) {
    absl::StatusOr<Manifests> m = RenderChart(overrides, release);
    EXPECT_TRUE(m.ok()) << m.status();
    std::multiset<std::string> objects;
    if (!m.ok()) return objects;
    for (const YAML::Node& o : m->objects) objects.insert(YAML::Dump(o));
    return objects;
  }
};

TEST_F(RealHelmTest, TheChartLints) {
  const auto [text, status] = RunCommand(HelmBinary() + " lint " + kChartDir + " --set tessera.image.repository=" +
                                  std::string(kTesseraImage));
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("0 chart(s) failed"), std::string::npos) << text;
}

TEST_F(RealHelmTest, HelmTemplateRendersWhatTheInTreeRendererRenders) {
  struct Case {
    std::string name;
    std::string overrides;
    Release release;
  };
  const Case cases[] = {
      {"defaults", "{}", {}},
      {"another release and namespace, two replicas", "{replicaCount: 2}", {.name = "gpu", .namespace_name = "ops"}},
      {"the webhook's certificate from a secret, no PriorityClasses",
       "{webhook: {certificate: {source: secret, secretName: my-tls, caBundle: Q0E=}}, priorityClasses: {enabled: false}}",
       {}},
      {"no webhook, no node agent", "{webhook: {enabled: false}, nodeAgent: {enabled: false}}", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::multiset<std::string> helm = HelmObjects(c.overrides, c.release);
    const std::multiset<std::string> ours = OurObjects(c.overrides, c.release);
    EXPECT_FALSE(helm.empty());
    for (const std::string& o : helm) {
      EXPECT_TRUE(ours.contains(o)) << "helm renders, the in-tree renderer does not:\n" << o;
    }
    for (const std::string& o : ours) {
      EXPECT_TRUE(helm.contains(o)) << "the in-tree renderer renders, helm does not:\n" << o;
    }
  }
}

}  // namespace
}  // namespace tessera::deploy
