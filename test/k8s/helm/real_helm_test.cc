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
#include <unistd.h>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

std::string HelmBinary() {
  if (const char* env = std::getenv("TESSERA_HELM"); env != nullptr && *env != '\0') return env;
  return std::string(TESSERA_SOURCE_DIR) + "/.tools/bin/helm";
}

// A folder of this process's own: ctest runs each test of this file as a
// process of its own, several at once, and they must not share files.
std::filesystem::path ScratchDir() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tessera-real-helm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
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
  void TearDown() override { std::filesystem::remove_all(ScratchDir()); }

  // `helm template` with the installer's image and `overrides` (a values file's text).
  std::multiset<std::string> HelmObjects(const std::string& overrides, const Release& release) {
    const std::filesystem::path values = ScratchDir() / "values.yaml";
    {
      std::FILE* f = std::fopen(values.c_str(), "w");
      const std::string text = "tessera: {image: {repository: " + std::string(kTesseraImage) + "}}\n";
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
    const std::filesystem::path more = ScratchDir() / "overrides.yaml";
    {
      std::FILE* f = std::fopen(more.c_str(), "w");
      std::fputs(overrides.c_str(), f);
      std::fclose(f);
    }
    std::string api_versions;
    for (const std::string& v : release.api_versions) api_versions += " --api-versions " + v;
    const auto [text, status] =
        RunCommand(HelmBinary() + " template " + release.name + " " + kChartDir + " --namespace " +
                   release.namespace_name + api_versions + " -f " + values.string() + " -f " + more.string());
    last_render_ = text;
    EXPECT_EQ(status, 0) << text;
    std::multiset<std::string> objects;
    for (const YAML::Node& doc : YAML::LoadAll(text)) {
      if (doc.IsNull()) continue;
      objects.insert(YAML::Dump(doc));
    }
    return objects;
  }

  std::string last_render_;  // the last `helm template` output

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
      {"the webhook on a cluster with cert-manager", "{webhook: {enabled: true}}", {}},
      {"the webhook with its certificate from a secret", "{webhook: {enabled: true, certificate: {source: secret, "
       "secretName: my-tls, caBundle: Q0E=}}}", {.api_versions = {}}},
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

// Writes `text` to a file of its own in a fresh folder; returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = ScratchDir() / name;
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path.string();
}

std::string Base64Decode(const std::string& in) {
  const auto [out, status] = RunCommand("printf '%s' '" + in + "' | openssl base64 -d -A");
  EXPECT_EQ(status, 0) << out;
  return out;
}

TEST_F(RealHelmTest, WithoutCertManagerTheChartMakesASelfSignedCaAndAServingCertificateItSigned) {
  // No cert-manager API: the "auto" source makes both at install.
  const Release release{.name = "t", .namespace_name = "gpu-system", .api_versions = {}};
  (void)HelmObjects("{webhook: {enabled: true}}", release);
  const std::vector<YAML::Node> docs = YAML::LoadAll(last_render_);
  YAML::Node secret, webhook;
  for (const YAML::Node& d : docs) {
    if (d.IsNull()) continue;
    const std::string kind = d["kind"].as<std::string>();
    if (kind == "Secret") secret.reset(d);
    if (kind == "MutatingWebhookConfiguration") webhook.reset(d);
    EXPECT_NE(kind, "Certificate") << "no cert-manager objects without cert-manager";
  }
  ASSERT_TRUE(secret.IsDefined() && webhook.IsDefined()) << last_render_;
  EXPECT_EQ(secret["type"].as<std::string>(), "kubernetes.io/tls");
  EXPECT_EQ(secret["metadata"]["name"].as<std::string>(), "t-tessera-webhook-tls");
  const std::string ca_bundle = webhook["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>();
  EXPECT_EQ(ca_bundle, secret["data"]["ca.crt"].as<std::string>());
  const std::string ca = WriteTemp("ca.pem", Base64Decode(ca_bundle));
  const std::string cert = WriteTemp("tls.pem", Base64Decode(secret["data"]["tls.crt"].as<std::string>()));
  const auto [verified, status] = RunCommand("openssl verify -CAfile " + ca + " " + cert);
  EXPECT_EQ(status, 0) << verified;
  const auto [text, text_status] = RunCommand("openssl x509 -noout -ext subjectAltName -in " + cert);
  EXPECT_EQ(text_status, 0) << text;
  EXPECT_NE(text.find("DNS:t-tessera-webhook.gpu-system.svc"), std::string::npos) << text;
  EXPECT_NE(text.find("DNS:t-tessera-webhook.gpu-system.svc.cluster.local"), std::string::npos) << text;
  const std::string key = WriteTemp("tls.key", Base64Decode(secret["data"]["tls.key"].as<std::string>()));
  const auto [cert_key, a] = RunCommand("openssl x509 -noout -pubkey -in " + cert);
  const auto [key_key, b] = RunCommand("openssl pkey -pubout -in " + key);
  EXPECT_EQ(cert_key, key_key) << "the key is the certificate's";
  // The Deployment mounts that Secret.
  for (const YAML::Node& d : docs) {
    if (d.IsNull() || d["kind"].as<std::string>() != "Deployment") continue;
    bool mounted = false;
    for (const YAML::Node& v : d["spec"]["template"]["spec"]["volumes"]) {
      mounted = mounted || (v["secret"] && v["secret"]["secretName"].as<std::string>() == "t-tessera-webhook-tls");
    }
    EXPECT_TRUE(mounted);
  }
}

}  // namespace
}  // namespace tessera::deploy
