// The Helm chart installed by the real helm into the real API server: every
// object it renders is accepted (Helm applies them server-side, so the API
// server validates each against its schema and admission), exists afterwards
// as rendered, survives an upgrade (the webhook certificate made with genCA is
// kept through `lookup`), and `helm uninstall` removes them all.
//
// Nothing runs the pods (the plane has no kubelet nor controller-manager):
// `helm install` does not wait for them. The webhook is on, with its
// namespaceSelector on a label no namespace carries, so that its
// configuration is installed and checked without sending this plane's pods to
// a webhook nobody serves.
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "test/k8s/helm/helm_cli.h"
#include "test/testing/control_plane.h"

namespace tessera::testing {
namespace {

using deploy::HelmBinary;
using deploy::KubectlBinary;
using deploy::ProgramResult;
using deploy::RunProgram;
using deploy::ScratchFile;
using json = nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kChart = std::string(TESSERA_SOURCE_DIR) + "/k8s/helm/tessera";
constexpr const char* kRelease = "tessera";

class HelmInstallTest : public ControlPlaneTest {
 protected:
  void SetUp() override {
    ControlPlaneTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    TESSERA_REQUIRE_HELM();
    if (::access(KubectlBinary().c_str(), X_OK) != 0) {
      if (deploy::HelmTestsInCi()) GTEST_FAIL() << "no kubectl at " << KubectlBinary();
      GTEST_SKIP() << "no kubectl at " << KubectlBinary() << " (scripts/install-helm.sh installs it)";
    }
    // Helm's own cache and configuration stay out of the user's home.
    helm_home_ = std::filesystem::temp_directory_path() / ("tessera-helm-home-" + ns());
    std::filesystem::create_directories(helm_home_);
    values_.emplace(absl::StrCat(
        "tessera: {image: {repository: registry.example.com/tessera-extender}}\n"
        "webhook: {enabled: true, namespaceSelector: {matchLabels: {tessera.io/helm-install-test: ", ns(), "}}}\n"));
  }
  void TearDown() override {
    if (installed_) (void)Helm({"uninstall", kRelease, "--namespace", ns()});
    if (!helm_home_.empty()) std::filesystem::remove_all(helm_home_);
    ControlPlaneTest::TearDown();
  }

  ProgramResult Helm(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", plane().run_dir() + "/admin.kubeconfig"});
    return RunProgram(HelmBinary(), args,
                      {{"HELM_CACHE_HOME", (helm_home_ / "cache").string()},
                       {"HELM_CONFIG_HOME", (helm_home_ / "config").string()},
                       {"HELM_DATA_HOME", (helm_home_ / "data").string()}});
  }
  ProgramResult Kubectl(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", plane().run_dir() + "/admin.kubeconfig"});
    return RunProgram(KubectlBinary(), args);
  }
  // A namespaced object of this test's namespace, or a cluster-scoped one, as the API server has it.
  json Get(const std::string& resource, const std::string& name, bool namespaced = true) {
    std::vector<std::string> args{"get", resource, name, "-o", "json"};
    if (namespaced) args.insert(args.end(), {"--namespace", ns()});
    const ProgramResult r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << resource << "/" << name << ": " << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  }

  std::filesystem::path helm_home_;
  std::optional<ScratchFile> values_;
  bool installed_ = false;
};

// "Kind namespace/name" of every document of a manifest.
std::multiset<std::string> ObjectsOf(const std::string& manifest) {
  std::multiset<std::string> objects;
  for (const YAML::Node& doc : YAML::LoadAll(manifest)) {
    if (doc.IsNull()) continue;
    const std::string ns = doc["metadata"]["namespace"] ? doc["metadata"]["namespace"].as<std::string>() : "";
    objects.insert(absl::StrCat(doc["kind"].as<std::string>(), " ", ns, "/", doc["metadata"]["name"].as<std::string>()));
  }
  return objects;
}

std::multiset<std::string> ObjectsOf(const json& list) {
  std::multiset<std::string> objects;
  for (const json& o : list["items"]) {
    objects.insert(absl::StrCat(o["kind"].get<std::string>(), " ", o["metadata"].value("namespace", ""), "/",
                                o["metadata"]["name"].get<std::string>()));
  }
  return objects;
}

TEST_F(HelmInstallTest, TheChartInstallsUpgradesAndUninstallsCleanly) {
  const ProgramResult install = Helm({"install", kRelease, kChart, "--namespace", ns(), "--values", values_->path()});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  installed_ = true;
  EXPECT_THAT(install.out, HasSubstr("STATUS: deployed"));
  EXPECT_THAT(install.out, HasSubstr("Tessera is installed")) << "NOTES.txt";

  // Every object the release rendered is on the server, labelled as Helm's.
  const ProgramResult manifest = Helm({"get", "manifest", kRelease, "--namespace", ns()});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  const std::multiset<std::string> rendered = ObjectsOf(manifest.out);
  const ScratchFile manifest_file(manifest.out);
  const ProgramResult listed = Kubectl({"get", "-f", manifest_file.path(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json on_server = json::parse(listed.out);
  EXPECT_EQ(ObjectsOf(on_server), rendered);
  for (const json& o : on_server["items"]) {
    EXPECT_EQ(o["metadata"]["labels"].value("app.kubernetes.io/managed-by", ""), "Helm") << o["metadata"]["name"];
  }
  for (const std::string kind : {"Deployment", "DaemonSet", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                 "Role", "RoleBinding", "Service", "NetworkPolicy", "PodDisruptionBudget", "PriorityClass",
                                 "MutatingWebhookConfiguration", "Secret"}) {
    EXPECT_THAT(rendered, Contains(::testing::StartsWith(kind + " "))) << "the default install has a " << kind;
  }

  // As the API server keeps them: the scheduler pair, its configuration, the classes.
  const json deployment = Get("deployment", "tessera");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  std::vector<std::string> containers;
  for (const json& c : deployment["spec"]["template"]["spec"]["containers"]) containers.push_back(c["name"]);
  EXPECT_THAT(containers, ::testing::ElementsAre("kube-scheduler", "tessera"));
  const json config = Get("configmap", "tessera-scheduler-config");
  EXPECT_THAT(config["data"].value("scheduler-config.yaml", ""), HasSubstr("kind: KubeSchedulerConfiguration"));
  EXPECT_EQ(Get("priorityclass", "tessera-guaranteed", false)["value"], 100000);
  EXPECT_EQ(Get("priorityclass", "tessera-opportunistic", false)["preemptionPolicy"], "Never");
  const json role = Get("clusterrole", "tessera-extender", false);
  EXPECT_FALSE(role["rules"].empty());
  // Without cert-manager the chart made the webhook's CA (genCA) and wrote it
  // into the configuration beside the Secret.
  const json secret = Get("secret", "tessera-webhook-tls");
  const json webhook = Get("mutatingwebhookconfiguration", "tessera-pods", false);
  ASSERT_TRUE(secret.is_object() && webhook.is_object());
  const std::string ca = secret["data"]["ca.crt"];
  EXPECT_EQ(webhook["webhooks"][0]["clientConfig"]["caBundle"], ca);

  // An upgrade keeps the certificate (lookup reads the Secret back) and applies the change.
  const ProgramResult upgrade = Helm({"upgrade", kRelease, kChart, "--namespace", ns(), "--values", values_->path(),
                                      "--set", "replicaCount=1"});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.out << upgrade.err;
  EXPECT_EQ(Get("secret", "tessera-webhook-tls")["data"]["tls.crt"], secret["data"]["tls.crt"]);
  EXPECT_EQ(Get("mutatingwebhookconfiguration", "tessera-pods", false)["webhooks"][0]["clientConfig"]["caBundle"], ca);
  EXPECT_EQ(Get("deployment", "tessera")["spec"]["replicas"], 1);
  const ProgramResult pdb = Kubectl({"get", "poddisruptionbudget", "--namespace", ns(), "-o", "name"});
  EXPECT_EQ(pdb.out, "") << "one replica: no budget, which would block every drain";

  const ProgramResult uninstall = Helm({"uninstall", kRelease, "--namespace", ns(), "--wait"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.out << uninstall.err;
  installed_ = false;
  const ProgramResult left = Kubectl({"get", "-f", manifest_file.path(), "--ignore-not-found", "-o", "name"});
  EXPECT_EQ(left.exit_code, 0) << left.err;
  EXPECT_EQ(left.out, "") << "left behind by helm uninstall";
}

TEST_F(HelmInstallTest, WithoutThePrometheusOperatorTheServiceMonitorIsRefusedBeforeAnythingIsApplied) {
  // .Capabilities.APIVersions here is the API server's discovery, which has
  // no monitoring.coreos.com: the chart fails the install, naming the CRDs,
  // instead of the API server refusing one object halfway through.
  const ProgramResult install = Helm({"install", kRelease, kChart, "--namespace", ns(), "--values", values_->path(),
                                      "--set", "metrics.serviceMonitor.enabled=true"});
  EXPECT_NE(install.exit_code, 0) << install.out;
  EXPECT_THAT(install.err, HasSubstr("needs the Prometheus Operator's CRDs"));
  const ProgramResult releases = Helm({"list", "--all", "--namespace", ns(), "-q"});
  EXPECT_EQ(releases.out, "") << "nothing installed";
}

TEST_F(HelmInstallTest, TheApiServerValidatesWhatTheSchemaLetsThrough) {
  // The schema takes any text as a nodeSelector key; the API server refuses a
  // key that is not a label key, and Helm reports the release failed. (What
  // this test guards: that the install above is validated at all.)
  const ScratchFile bad("nodeSelector: {'not a label key!': 'yes'}\n");
  const ProgramResult install = Helm(
      {"install", kRelease, kChart, "--namespace", ns(), "--values", values_->path(), "--values", bad.path()});
  installed_ = true;  // a failed release is still a release: TearDown uninstalls it
  EXPECT_NE(install.exit_code, 0) << install.out;
  EXPECT_THAT(install.err, HasSubstr("not a label key!"));
  const ProgramResult status = Helm({"status", kRelease, "--namespace", ns()});
  EXPECT_THAT(status.out, HasSubstr("STATUS: failed"));
}

}  // namespace
}  // namespace tessera::testing
