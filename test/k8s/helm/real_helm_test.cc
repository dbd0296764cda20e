// What the real Helm does with the chart beyond the objects the chart tests
// check (`helm lint --strict` is in values_schema_test.cc): it refuses
// clusters older than the chart's kubeVersion, reads values files as YAML 1.1
// and drops null overrides (as every install does), and, without
// cert-manager, makes the webhook's CA and serving certificate itself
// (genCA), checked here with openssl.
//
// Without helm the tests are skipped with the reason; with CI=true they fail
// instead, so CI cannot pass without having run them.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RealHelmTest : public ChartTest {};

// Runs a shell command (openssl) and returns what it printed and its exit code.
ProgramResult Shell(const std::string& command) { return RunProgram("/bin/sh", {"-c", command}); }

std::string Base64Decode(const std::string& in) {
  const ScratchFile encoded(in, ".b64");
  const ProgramResult r = Shell("openssl base64 -d -A -in " + encoded.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST_F(RealHelmTest, RefusesAClusterOlderThanTheChartsKubeVersion) {
  // kubescheduler.config.k8s.io/v1 needs 1.25 (Chart.yaml's kubeVersion).
  const absl::StatusOr<Manifests> old = RenderChart("", {.kube_version = "v1.24.17"});
  ASSERT_FALSE(old.ok());
  EXPECT_THAT(std::string(old.status().message()), HasSubstr("chart requires kubeVersion: >=1.25.0-0"));
  EXPECT_TRUE(RenderChart("", {.kube_version = "v1.25.0"}).ok());
  EXPECT_TRUE(RenderChart("", {.kube_version = "v1.33.1"}).ok());
}

TEST_F(RealHelmTest, ReadsValuesFilesAsYaml11) {
  // yes, no, on, off, y and n are booleans, even as keys; quoted they are text.
  const absl::StatusOr<Manifests> yes = RenderChart("{commonLabels: {team: yes}}");
  ASSERT_FALSE(yes.ok());
  EXPECT_THAT(std::string(yes.status().message()), HasSubstr("at '/commonLabels/team': got boolean, want string"));
  const absl::StatusOr<Manifests> n = RenderChart("{commonLabels: {n: north}}");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->One("Deployment")["metadata"]["labels"]["false"].as<std::string>(), "north");
  const absl::StatusOr<Manifests> quoted = RenderChart("{commonLabels: {team: 'yes', 'n': north}}");
  ASSERT_TRUE(quoted.ok()) << quoted.status();
  EXPECT_EQ(quoted->One("Deployment")["metadata"]["labels"]["team"].as<std::string>(), "yes");
  EXPECT_EQ(quoted->One("Deployment")["metadata"]["labels"]["n"].as<std::string>(), "north");
}

TEST_F(RealHelmTest, ANullOverrideDropsTheDefault) {
  // How a user removes a default list or map: Helm deletes the key.
  const absl::StatusOr<Manifests> m = RenderChart("{nodeAgent: {tolerations: null}}");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->One("DaemonSet", "-node-agent")["spec"]["template"]["spec"]["tolerations"].IsDefined());
}

TEST_F(RealHelmTest, WithoutCertManagerTheChartMakesASelfSignedCaAndAServingCertificateItSigned) {
  // No cert-manager API: the "auto" source makes both at install.
  const Release release{.name = "t", .namespace_name = "gpu-system", .api_versions = {}};
  const absl::StatusOr<Manifests> m = RenderChart("{webhook: {enabled: true}}", release);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->All("Certificate"), IsEmpty()) << "no cert-manager objects without cert-manager";
  EXPECT_THAT(m->All("Issuer"), IsEmpty());
  const YAML::Node secret = m->One("Secret", "-webhook-tls");
  const YAML::Node webhook = m->One("MutatingWebhookConfiguration");
  ASSERT_TRUE(secret.IsMap() && webhook.IsMap());
  EXPECT_EQ(secret["type"].as<std::string>(), "kubernetes.io/tls");
  EXPECT_EQ(secret["metadata"]["name"].as<std::string>(), "t-tessera-webhook-tls");
  const std::string ca_bundle = webhook["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>();
  EXPECT_EQ(ca_bundle, secret["data"]["ca.crt"].as<std::string>());
  const ScratchFile ca(Base64Decode(ca_bundle), ".pem");
  const ScratchFile cert(Base64Decode(secret["data"]["tls.crt"].as<std::string>()), ".pem");
  const ProgramResult verified = Shell("openssl verify -CAfile " + ca.path() + " " + cert.path());
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  const ProgramResult names = Shell("openssl x509 -noout -ext subjectAltName -in " + cert.path());
  EXPECT_EQ(names.exit_code, 0) << names.err;
  EXPECT_THAT(names.out, HasSubstr("DNS:t-tessera-webhook.gpu-system.svc"));
  EXPECT_THAT(names.out, HasSubstr("DNS:t-tessera-webhook.gpu-system.svc.cluster.local"));
  const ScratchFile key(Base64Decode(secret["data"]["tls.key"].as<std::string>()), ".key");
  const ProgramResult cert_key = Shell("openssl x509 -noout -pubkey -in " + cert.path());
  const ProgramResult key_key = Shell("openssl pkey -pubout -in " + key.path());
  EXPECT_EQ(cert_key.out, key_key.out) << "the key is the certificate's";
  // The Deployment mounts that Secret.
  bool mounted = false;
  for (const YAML::Node& v : m->One("Deployment")["spec"]["template"]["spec"]["volumes"]) {
    mounted = mounted || (v["secret"] && v["secret"]["secretName"].as<std::string>() == "t-tessera-webhook-tls");
  }
  EXPECT_TRUE(mounted);
}

}  // namespace
}  // namespace tessera::deploy
