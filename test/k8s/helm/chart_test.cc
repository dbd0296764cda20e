// The Helm chart under k8s/helm/tessera, rendered as `helm install` would:
// its files parse, and the objects it makes fit together (names, ports,
// labels, mounts), run locked down, and get only the permissions they need.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_join.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const YAML::Node& item : list) out.push_back(item.as<std::string>());
  return out;
}

Manifests Rendered(std::string_view overrides = "", const Release& release = {}) {
  absl::StatusOr<Manifests> m = RenderChart(overrides, release);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Manifests{};
}

absl::Status RenderError(std::string_view overrides) {
  absl::StatusOr<Manifests> m = RenderChart(overrides);
  return m.ok() ? absl::OkStatus() : m.status();
}

// The fixtures of the tests that run helm (ChartTest skips them without it).
class ChartRender : public ChartTest {};
class ChartDeployment : public ChartTest {};
class ChartRbac : public ChartTest {};
class ChartMetrics : public ChartTest {};
class ChartNetworkPolicy : public ChartTest {};
class ChartDisruptionBudget : public ChartTest {};
class ChartNotes : public ChartTest {};

// --- the chart's files ---------------------------------------------------------

TEST(ChartFiles, ChartYamlNamesTheChartAndItsVersions) {
  const YAML::Node chart = YAML::LoadFile(kChartDir + "/Chart.yaml");
  EXPECT_EQ(chart["apiVersion"].as<std::string>(), "v2");
  EXPECT_EQ(chart["name"].as<std::string>(), "tessera");
  EXPECT_EQ(chart["type"].as<std::string>(), "application");
  const std::regex semver(R"(^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$)");
  EXPECT_TRUE(std::regex_match(chart["version"].as<std::string>(), semver));
  EXPECT_TRUE(std::regex_match(chart["appVersion"].as<std::string>(), semver));
}

TEST(ChartFiles, DefaultPolicyIsTheShippedOneAndLoads) {
  const std::string policy = YAML::LoadFile(kChartDir + "/values.yaml")["tessera"]["policy"].as<std::string>();
  EXPECT_EQ(policy, ReadText(std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"))
      << "values.yaml's tessera.policy must stay config/examples/default-policy.yaml";
  const PluginRegistry registry = NewBuiltinRegistry();
  const auto profile = LoadPolicyText(policy, "values.yaml:tessera.policy", registry);
  EXPECT_TRUE(profile.ok()) << profile.status();
}

// --- what an install creates ----------------------------------------------------

TEST_F(ChartRender, CreatesTheSchedulerAndWhatItNeeds) {
  const Manifests m = Rendered();
  std::multiset<std::string> kinds;
  for (const YAML::Node& o : m.objects) kinds.insert(o["kind"].as<std::string>());
  // ConfigMaps: the scheduler's configuration, the policy, the Grafana dashboard.
  EXPECT_EQ(kinds, (std::multiset<std::string>{"Deployment", "ConfigMap", "ConfigMap", "ConfigMap", "ServiceAccount", "ClusterRole",
                                                "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding", "Role",
                                                "RoleBinding", "RoleBinding", "Service", "NetworkPolicy",
                                                "PodDisruptionBudget", "PriorityClass", "PriorityClass",
                                                // the node agent (node_agent_chart_test.cc)
                                                "DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"}));
}

TEST_F(ChartRender, PriorityClassesPutGuaranteedWorkAboveWorkThatBorrowsAndThatNeverPreempts) {
  const Manifests m = Rendered();
  const YAML::Node guaranteed = m.One("PriorityClass", "tessera-guaranteed");
  const YAML::Node opportunistic = m.One("PriorityClass", "tessera-opportunistic");
  EXPECT_GT(guaranteed["value"].as<int64_t>(), opportunistic["value"].as<int64_t>());
  EXPECT_EQ(guaranteed["preemptionPolicy"].as<std::string>(), "PreemptLowerPriority");
  EXPECT_EQ(opportunistic["preemptionPolicy"].as<std::string>(), "Never");
  EXPECT_FALSE(guaranteed["globalDefault"].as<bool>());
  EXPECT_TRUE(Rendered("{priorityClasses: {enabled: false}}").All("PriorityClass").empty());
}

TEST_F(ChartRender, NamesObjectsAfterTheReleaseWithoutRepeatingTessera) {
  EXPECT_EQ(Rendered("", {.name = "tessera"}).One("Deployment")["metadata"]["name"].as<std::string>(), "tessera");
  EXPECT_EQ(Rendered("", {.name = "gpu"}).One("Deployment")["metadata"]["name"].as<std::string>(), "gpu-tessera");
  EXPECT_EQ(Rendered("{fullnameOverride: sched}").One("Deployment")["metadata"]["name"].as<std::string>(), "sched");
}

TEST_F(ChartRender, NamespacedObjectsGoToTheReleaseNamespace) {
  const Manifests m = Rendered("", {.name = "t", .namespace_name = "gpu-system"});
  for (const YAML::Node& o : m.objects) {
    const std::string kind = o["kind"].as<std::string>();
    if (kind == "ClusterRole" || kind == "ClusterRoleBinding" || kind == "PriorityClass") {
      EXPECT_FALSE(o["metadata"]["namespace"].IsDefined()) << kind;
    } else if (o["metadata"]["name"].as<std::string>() == "t-tessera-authentication-reader") {
      EXPECT_EQ(o["metadata"]["namespace"].as<std::string>(), "kube-system");  // where the Role it binds lives
    } else {
      EXPECT_EQ(o["metadata"]["namespace"].as<std::string>(), "gpu-system") << kind << " " << o["metadata"]["name"];
    }
    EXPECT_EQ(o["metadata"]["labels"]["app.kubernetes.io/instance"].as<std::string>(), "t") << kind;
  }
}

TEST_F(ChartRender, TesseraImageMustBeGiven) {
  EXPECT_THAT(RenderError("{tessera: {image: {repository: ''}}}").message(),
              HasSubstr("tessera.image.repository is required"));
}

TEST_F(ChartRender, TesseraImageTagDefaultsToTheAppVersion) {
  const std::string app_version = YAML::LoadFile(kChartDir + "/Chart.yaml")["appVersion"].as<std::string>();
  EXPECT_EQ(Container(Rendered().One("Deployment"), "tessera")["image"].as<std::string>(),
            absl::StrCat(Absl(kTesseraImage), ":", app_version));
  EXPECT_EQ(Container(Rendered("{tessera: {image: {tag: '2.0.1'}}}").One("Deployment"), "tessera")["image"].as<std::string>(),
            absl::StrCat(Absl(kTesseraImage), ":2.0.1"));
}

// --- the Deployment ---------------------------------------------------------------

TEST_F(ChartDeployment, RunsTwoReplicasOfKubeSchedulerWithTesseraBeside) {
  const YAML::Node d = Rendered().One("Deployment");
  EXPECT_EQ(d["spec"]["replicas"].as<int>(), 2);
  const YAML::Node pod = d["spec"]["template"];
  for (auto kv : d["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(pod["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  std::vector<std::string> names;
  for (const YAML::Node& c : pod["spec"]["containers"]) names.push_back(c["name"].as<std::string>());
  EXPECT_THAT(names, ElementsAre("kube-scheduler", "tessera"));
  EXPECT_EQ(pod["spec"]["serviceAccountName"].as<std::string>(),
            Rendered().One("ServiceAccount", "tessera")["metadata"]["name"].as<std::string>());
}

TEST_F(ChartDeployment, KubeSchedulerReadsTheConfigMapAtTheConfigPath) {
  const Manifests m = Rendered("{kubeScheduler: {image: {tag: v1.29.2}}}");
  const YAML::Node d = m.One("Deployment");
  const YAML::Node ks = Container(d, "kube-scheduler");
  EXPECT_EQ(ks["image"].as<std::string>(), "registry.k8s.io/kube-scheduler:v1.29.2");
  EXPECT_EQ(FlagValue(ks, "--config"), "/etc/kubernetes/scheduler-config.yaml");

  // --config's directory is the mount of a volume holding the ConfigMap's key under that file name.
  ASSERT_EQ(ks["volumeMounts"].size(), 1u);
  EXPECT_EQ(ks["volumeMounts"][0]["mountPath"].as<std::string>(), "/etc/kubernetes");
  const std::string volume = ks["volumeMounts"][0]["name"].as<std::string>();
  const std::string configmap = m.One("ConfigMap", "-scheduler-config")["metadata"]["name"].as<std::string>();
  bool found = false;
  for (const YAML::Node& v : d["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"].as<std::string>() != volume) continue;
    found = true;
    EXPECT_EQ(v["configMap"]["name"].as<std::string>(), configmap);
    EXPECT_EQ(v["configMap"]["items"][0]["key"].as<std::string>(), "scheduler-config.yaml");
    EXPECT_EQ(v["configMap"]["items"][0]["path"].as<std::string>(), "scheduler-config.yaml");
  }
  EXPECT_TRUE(found) << "no volume " << volume;
}

TEST_F(ChartDeployment, TesseraReadsThePolicyConfigMap) {
  const Manifests m = Rendered("{tessera: {policy: \"apiVersion: tessera.io/v1alpha1\\n\"}}");
  const YAML::Node d = m.One("Deployment");
  const YAML::Node tessera = Container(d, "tessera");
  EXPECT_EQ(FlagValue(tessera, "--policy-file"), "/etc/tessera/policy.yaml");
  EXPECT_EQ(tessera["volumeMounts"][0]["mountPath"].as<std::string>(), "/etc/tessera");
  const YAML::Node policy = m.One("ConfigMap", "-policy");
  EXPECT_EQ(policy["data"]["policy.yaml"].as<std::string>(), "apiVersion: tessera.io/v1alpha1\n");
  bool found = false;
  for (const YAML::Node& v : d["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"].as<std::string>() == tessera["volumeMounts"][0]["name"].as<std::string>()) {
      found = true;
      EXPECT_EQ(v["configMap"]["name"].as<std::string>(), policy["metadata"]["name"].as<std::string>());
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ChartDeployment, DefaultPolicyConfigMapHoldsTheShippedPolicy) {
  EXPECT_EQ(Rendered().One("ConfigMap", "-policy")["data"]["policy.yaml"].as<std::string>(),
            ReadText(std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml"));
}

TEST_F(ChartDeployment, PassesTesseraItsFlagsFromValues) {
  const YAML::Node tessera = Container(Rendered(R"(
tessera: {port: 9000, threads: 4, reservationTTL: 90s, apiTimeout: 10s, bindThreads: 32, bindTimeout: 3s,
          policyPollInterval: 5s, extraArgs: [--max-body-bytes=67108864]}
)").One("Deployment"),
                                       "tessera");
  EXPECT_EQ(FlagValue(tessera, "--port"), "9000");
  EXPECT_EQ(FlagValue(tessera, "--threads"), "4");
  EXPECT_EQ(FlagValue(tessera, "--reservation-ttl"), "90s");
  EXPECT_EQ(FlagValue(tessera, "--api-timeout"), "10s");
  EXPECT_EQ(FlagValue(tessera, "--bind-threads"), "32");
  EXPECT_EQ(FlagValue(tessera, "--bind-timeout"), "3s");
  EXPECT_EQ(FlagValue(tessera, "--policy-poll-interval"), "5s");
  EXPECT_EQ(FlagValue(tessera, "--max-body-bytes"), "67108864");
  EXPECT_EQ(tessera["ports"][0]["containerPort"].as<int>(), 9000);
  EXPECT_FALSE(FlagValue(tessera, "--kubeconfig").has_value()) << "in the cluster Tessera uses its service account";
  EXPECT_FALSE(FlagValue(tessera, "--cluster-file").has_value());
}

TEST_F(ChartDeployment, ProbesReachBothContainers) {
  const YAML::Node d = Rendered().One("Deployment");
  const YAML::Node ks = Container(d, "kube-scheduler");
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    EXPECT_EQ(ks[probe]["httpGet"]["path"].as<std::string>(), "/healthz");
    EXPECT_EQ(ks[probe]["httpGet"]["scheme"].as<std::string>(), "HTTPS");
    EXPECT_EQ(ks[probe]["httpGet"]["port"].as<std::string>(), ks["ports"][0]["name"].as<std::string>());
  }
  EXPECT_EQ(ks["ports"][0]["containerPort"].as<int>(), 10259);
  EXPECT_EQ(FlagValue(ks, "--secure-port"), "10259");
  // The kubelet probes the pod IP, on the read-only port; the verbs stay on
  // loopback, where only kube-scheduler beside Tessera reaches them.
  EXPECT_EQ(FlagValue(Container(d, "tessera"), "--address"), "127.0.0.1");
  EXPECT_TRUE(FlagValue(Container(d, "tessera"), "--read-only-port").has_value());
}

TEST_F(ChartDeployment, RefusesOnePortForBothContainers) {
  EXPECT_THAT(RenderError("{tessera: {port: 10259}}").message(), HasSubstr("must differ"));
}

TEST_F(ChartDeployment, RunsLockedDown) {
  const YAML::Node pod = Rendered().One("Deployment")["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_GT(pod["securityContext"]["runAsUser"].as<int>(), 0);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  for (const YAML::Node& c : pod["containers"]) {
    const YAML::Node sc = c["securityContext"];
    EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>()) << c["name"];
    EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>()) << c["name"];
    EXPECT_THAT(Strings(sc["capabilities"]["drop"]), ElementsAre("ALL")) << c["name"];
    EXPECT_TRUE(c["resources"]["requests"]["cpu"].IsDefined()) << c["name"];
    EXPECT_TRUE(c["resources"]["requests"]["memory"].IsDefined()) << c["name"];
    EXPECT_TRUE(c["resources"]["limits"]["memory"].IsDefined()) << c["name"];
    for (const YAML::Node& mount : c["volumeMounts"]) EXPECT_TRUE(mount["readOnly"].as<bool>()) << c["name"];
  }
}

TEST_F(ChartDeployment, RollsWhenTheSchedulerConfigurationChanges) {
  auto checksum = [](std::string_view overrides) {
    return Rendered(overrides).One("Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/scheduler-config"]
        .as<std::string>();
  };
  EXPECT_THAT(checksum(""), ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(checksum(""), checksum(""));
  EXPECT_NE(checksum(""), checksum("{extender: {weight: 6}}"));
  // The policy is reloaded by Tessera itself: no restart.
  EXPECT_EQ(checksum(""), checksum("{tessera: {policy: \"apiVersion: tessera.io/v1alpha1\\n\"}}"));
}

TEST_F(ChartDeployment, PrefersReplicasOnDifferentNodesUnlessTold) {
  const YAML::Node affinity = Rendered().One("Deployment")["spec"]["template"]["spec"]["affinity"];
  const YAML::Node term = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"];
  EXPECT_EQ(term["topologyKey"].as<std::string>(), "kubernetes.io/hostname");
  EXPECT_EQ(term["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"].as<std::string>(), "tessera");
  const YAML::Node custom = Rendered("{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                                     "{nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}}")
                                .One("Deployment")["spec"]["template"]["spec"]["affinity"];
  EXPECT_FALSE(custom["podAntiAffinity"].IsDefined());
  EXPECT_TRUE(custom["nodeAffinity"].IsDefined());
}

// --- permissions --------------------------------------------------------------------

TEST_F(ChartRbac, TesseraGetsExactlyWhatItUses) {
  const YAML::Node role = Rendered().One("ClusterRole", "-extender");
  std::vector<std::string> rules;
  for (const YAML::Node& r : role["rules"]) {
    const std::vector<std::string> groups = Strings(r["apiGroups"]);
    ASSERT_EQ(groups.size(), 1u) << "one API group a rule";
    for (const std::string& resource : Strings(r["resources"])) {
      rules.push_back(absl::StrCat(groups[0].empty() ? "" : groups[0] + "/", resource, ":",
                                   absl::StrJoin(Strings(r["verbs"]), ",")));
    }
  }
  EXPECT_THAT(rules, UnorderedElementsAre("nodes:get,list,watch", "nodes/status:patch", "pods:get,list,watch,patch",
                                          "pods/binding:create", "pods/eviction:create", "pods/status:patch",
                                          "events:create", "resource.k8s.io/resourceslices:list,watch",
                                          "resource.k8s.io/resourceclaims:list,watch"));
}

TEST_F(ChartRbac, NoRuleUsesWildcards) {
  for (const std::string kind : {"ClusterRole", "Role"}) {
    for (const YAML::Node& role : Rendered().All(kind)) {
      for (const YAML::Node& r : role["rules"]) {
        for (const char* field : {"apiGroups", "resources", "verbs"}) {
          EXPECT_THAT(Strings(r[field]), Not(Contains("*"))) << role["metadata"]["name"];
        }
      }
    }
  }
}

TEST_F(ChartRbac, KubeSchedulerActsAsTheClusterSchedulerUnderItsOwnLease) {
  const Manifests m = Rendered("", {.name = "t", .namespace_name = "gpu-system"});
  const std::string sa = m.One("ServiceAccount", "tessera")["metadata"]["name"].as<std::string>();
  std::set<std::string> cluster_roles;
  for (const YAML::Node& b : m.All("ClusterRoleBinding")) {
    if (absl::EndsWith(b["metadata"]["name"].as<std::string>(), "-node-agent")) continue;  // node_agent_chart_test.cc
    cluster_roles.insert(b["roleRef"]["name"].as<std::string>());
    ASSERT_EQ(b["subjects"].size(), 1u);
    EXPECT_EQ(b["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(b["subjects"][0]["name"].as<std::string>(), sa);
    EXPECT_EQ(b["subjects"][0]["namespace"].as<std::string>(), "gpu-system");
  }
  EXPECT_EQ(cluster_roles, (std::set<std::string>{"system:kube-scheduler", "system:volume-scheduler", "t-tessera-extender"}));

  // The lease kube-scheduler is configured with is the one its Role lets it renew.
  const YAML::Node config = YAML::Load(m.One("ConfigMap", "-scheduler-config")["data"]["scheduler-config.yaml"].as<std::string>());
  const YAML::Node lease = m.One("Role", "-leader-election");
  EXPECT_EQ(lease["metadata"]["namespace"].as<std::string>(), config["leaderElection"]["resourceNamespace"].as<std::string>());
  EXPECT_EQ(config["leaderElection"]["resourceNamespace"].as<std::string>(), "gpu-system");
  EXPECT_EQ(config["leaderElection"]["resourceName"].as<std::string>(), "tessera-scheduler");
  bool renews = false;
  for (const YAML::Node& r : lease["rules"]) {
    EXPECT_THAT(Strings(r["resources"]), ElementsAre("leases"));
    if (r["resourceNames"]) {
      EXPECT_THAT(Strings(r["resourceNames"]), ElementsAre(config["leaderElection"]["resourceName"].as<std::string>(),
                                                            "tessera-scheduler-extender"));
      EXPECT_THAT(Strings(r["verbs"]), UnorderedElementsAre("get", "update"));
      renews = true;
    }
  }
  EXPECT_TRUE(renews);
  // Tessera elects its writer on the lease beside kube-scheduler's, with the same timing.
  const YAML::Node tessera = Container(m.One("Deployment"), "tessera");
  EXPECT_EQ(FlagValue(tessera, "--leader-elect-lease"), "gpu-system/tessera-scheduler-extender");
  EXPECT_EQ(FlagValue(tessera, "--leader-elect-lease-duration"), config["leaderElection"]["leaseDuration"].as<std::string>());
  EXPECT_EQ(FlagValue(tessera, "--leader-elect-renew-deadline"), config["leaderElection"]["renewDeadline"].as<std::string>());
  EXPECT_EQ(FlagValue(tessera, "--leader-elect-retry-period"), config["leaderElection"]["retryPeriod"].as<std::string>());
  const YAML::Node binding = m.One("RoleBinding", "-leader-election");
  EXPECT_EQ(binding["metadata"]["namespace"].as<std::string>(), "gpu-system");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), lease["metadata"]["name"].as<std::string>());
}

TEST_F(ChartRbac, CanBeLeftToTheInstaller) {
  const Manifests m = Rendered("{rbac: {create: false}, serviceAccount: {create: false, name: gpu-scheduler}}");
  EXPECT_THAT(m.All("ClusterRole"), IsEmpty());
  EXPECT_THAT(m.All("ClusterRoleBinding"), IsEmpty());
  EXPECT_THAT(m.All("ServiceAccount"), IsEmpty());
  EXPECT_EQ(m.One("Deployment")["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>(), "gpu-scheduler");
  EXPECT_THAT(RenderError("{serviceAccount: {create: false}}").message(), HasSubstr("serviceAccount.name is required"));
}

// --- metrics, network, disruption -------------------------------------------------------

TEST_F(ChartMetrics, ServiceSelectsTheSchedulerPodsOnTesserasPort) {
  const Manifests m = Rendered();
  const YAML::Node service = m.One("Service", "-metrics");
  const YAML::Node pod = m.One("Deployment")["spec"]["template"];
  for (auto kv : service["spec"]["selector"]) {
    EXPECT_EQ(pod["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  // The read-only port: /metrics without the verbs (--read-only-port).
  const YAML::Node tessera = Container(m.One("Deployment"), "tessera");
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"].as<std::string>(), "http-readonly");
  bool declared = false;
  for (const YAML::Node& p : tessera["ports"]) {
    if (p["name"].as<std::string>() == "http-readonly") {
      declared = p["containerPort"].as<std::string>() == FlagValue(tessera, "--read-only-port");
    }
  }
  EXPECT_TRUE(declared) << "no container port http-readonly at --read-only-port";
  EXPECT_THAT(m.All("ServiceMonitor"), IsEmpty());
}

// A cluster with the Prometheus Operator's CRDs (and cert-manager).
const Release kWithPrometheusOperator{.api_versions = {"cert-manager.io/v1", "monitoring.coreos.com/v1"}};

TEST_F(ChartMetrics, ServiceMonitorScrapesTheServicesPort) {
  const Manifests m =
      Rendered("{metrics: {serviceMonitor: {enabled: true, labels: {release: prometheus}}}}", kWithPrometheusOperator);
  const YAML::Node monitor = m.One("ServiceMonitor");
  const YAML::Node service = m.One("Service", "-metrics");
  EXPECT_EQ(monitor["metadata"]["labels"]["release"].as<std::string>(), "prometheus");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["port"].as<std::string>(), service["spec"]["ports"][0]["name"].as<std::string>());
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["path"].as<std::string>(), "/metrics");
  for (auto kv : monitor["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(service["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["interval"].as<std::string>(), "30s");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["scrapeTimeout"].as<std::string>(), "10s");
  const absl::StatusOr<Manifests> without_service =
      RenderChart("{metrics: {service: {enabled: false}, serviceMonitor: {enabled: true}}}", kWithPrometheusOperator);
  ASSERT_FALSE(without_service.ok());
  EXPECT_THAT(without_service.status().message(), HasSubstr("needs metrics.service.enabled"));
}

TEST_F(ChartMetrics, ServiceMonitorNeedsAClusterThatServesItsKind) {
  // Without the CRDs the API server would refuse the object mid-install; the
  // chart refuses first, saying what is missing.
  EXPECT_THAT(RenderError("{metrics: {serviceMonitor: {enabled: true}}}").message(),
              HasSubstr("metrics.serviceMonitor.enabled needs the Prometheus Operator's CRDs (monitoring.coreos.com/v1)"));
  // Off (the default), the chart installs anywhere.
  EXPECT_THAT(Rendered().All("ServiceMonitor"), IsEmpty());
}

TEST_F(ChartNetworkPolicy, LeavesKubeSchedulersPortOpenAndAdmitsOnlyTheListedScrapersToTesserasPort) {
  const Manifests m = Rendered();
  const YAML::Node closed = m.One("NetworkPolicy");
  EXPECT_THAT(Strings(closed["spec"]["policyTypes"]), ElementsAre("Ingress"));
  // kube-scheduler's port (HTTPS, authenticated): open to every peer, for its metrics.
  ASSERT_EQ(closed["spec"]["ingress"].size(), 1u);
  const YAML::Node scheduler_rule = closed["spec"]["ingress"][0];
  EXPECT_FALSE(scheduler_rule["from"].IsDefined()) << "every peer";
  ASSERT_EQ(scheduler_rule["ports"].size(), 1u);
  const YAML::Node ks = Container(m.One("Deployment"), "kube-scheduler");
  EXPECT_EQ(scheduler_rule["ports"][0]["port"].as<int>(), ks["ports"][0]["containerPort"].as<int>());
  EXPECT_EQ(scheduler_rule["ports"][0]["port"].as<int>(), 10259);
  EXPECT_EQ(Rendered("{kubeScheduler: {securePort: 10300}}").One("NetworkPolicy")["spec"]["ingress"][0]["ports"][0]["port"]
                .as<int>(),
            10300);

  const YAML::Node open = Rendered(R"(
tessera: {readOnlyPort: 9000}
networkPolicy: {metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}
)").One("NetworkPolicy");
  ASSERT_EQ(open["spec"]["ingress"].size(), 2u);
  EXPECT_EQ(open["spec"]["ingress"][0]["ports"][0]["port"].as<int>(), 10259);
  const YAML::Node rule = open["spec"]["ingress"][1];
  EXPECT_EQ(rule["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"].as<std::string>(), "monitoring");
  ASSERT_EQ(rule["ports"].size(), 1u);
  EXPECT_EQ(rule["ports"][0]["port"].as<int>(), 9000);
  EXPECT_THAT(Rendered("{networkPolicy: {enabled: false}}").All("NetworkPolicy"), IsEmpty());
}

TEST_F(ChartDisruptionBudget, KeepsOneSchedulerThroughDrains) {
  const Manifests m = Rendered();
  const YAML::Node pdb = m.One("PodDisruptionBudget");
  EXPECT_EQ(pdb["apiVersion"].as<std::string>(), "policy/v1");
  EXPECT_EQ(pdb["spec"]["minAvailable"].as<int>(), 1);
  for (auto kv : pdb["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(m.One("Deployment")["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(),
              kv.second.as<std::string>());
  }
  EXPECT_THAT(Rendered("{replicaCount: 1}").All("PodDisruptionBudget"), IsEmpty()) << "it would block every drain";
  EXPECT_THAT(RenderError("{podDisruptionBudget: {minAvailable: 2}}").message(), HasSubstr("must be below replicaCount"));
}

TEST_F(ChartNotes, TellHowToOptAPodIn) {
  const absl::StatusOr<std::string> notes = RenderNotes("{schedulerName: gpu-scheduler}");
  ASSERT_TRUE(notes.ok()) << notes.status();
  EXPECT_THAT(*notes, HasSubstr("schedulerName: gpu-scheduler"));
  EXPECT_THAT(*notes, HasSubstr("tessera.io/gpu-fraction"));
  EXPECT_THAT(*notes, HasSubstr("tessera.io/visible-devices"));
  EXPECT_THAT(*notes, HasSubstr("gpu-assignment"));
  EXPECT_THAT(*notes, HasSubstr("networkPolicy.metricsFrom"));
}

}  // namespace
}  // namespace tessera::deploy

namespace tessera::deploy {
namespace {

class ChartWebhook : public ChartTest {};

TEST_F(ChartWebhook, IsOffByDefault) {
  const Manifests m = Rendered();
  EXPECT_TRUE(m.All("MutatingWebhookConfiguration").empty());
  EXPECT_TRUE(m.All("Certificate").empty());
}

TEST_F(ChartWebhook, WithCertManagerServesTlsFromTheCertificateItsCaInjected) {
  const Manifests m = Rendered("{webhook: {enabled: true}}", {.name = "t", .namespace_name = "gpu-system"});
  const YAML::Node config = m.One("MutatingWebhookConfiguration");
  EXPECT_EQ(config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as<std::string>(),
            "gpu-system/t-tessera-webhook");
  const YAML::Node hook = config["webhooks"][0];
  EXPECT_EQ(hook["failurePolicy"].as<std::string>(), "Fail");
  EXPECT_EQ(hook["clientConfig"]["service"]["name"].as<std::string>(), "t-tessera-webhook");
  EXPECT_EQ(hook["clientConfig"]["service"]["path"].as<std::string>(), "/mutate-pods");
  EXPECT_EQ(hook["namespaceSelector"]["matchLabels"]["tessera.io/webhook"].as<std::string>(), "enabled");
  EXPECT_EQ(hook["namespaceSelector"]["matchExpressions"][0]["values"][1].as<std::string>(), "gpu-system");
  EXPECT_EQ(m.One("Certificate", "-webhook")["spec"]["secretName"].as<std::string>(), "t-tessera-webhook-tls");
  EXPECT_EQ(m.One("Service", "-webhook")["spec"]["ports"][0]["targetPort"].as<std::string>(), "https-webhook");

  const YAML::Node tessera = m.One("Deployment")["spec"]["template"]["spec"]["containers"][1];
  std::vector<std::string> args;
  for (const YAML::Node& a : tessera["args"]) args.push_back(a.as<std::string>());
  EXPECT_THAT(args, ::testing::IsSupersetOf({"--webhook-port=8443", "--webhook-cert-file=/etc/tessera-webhook/tls.crt",
                                             "--webhook-key-file=/etc/tessera-webhook/tls.key",
                                             "--gpu-enforcement=none"}));
}

TEST_F(ChartWebhook, WithASecretOfYoursNeedsItsNameAndCa) {
  EXPECT_FALSE(RenderChart("{webhook: {enabled: true, certificate: {source: secret}}}").ok());
  const Manifests m =
      Rendered("{webhook: {enabled: true, certificate: {source: secret, secretName: mine, caBundle: Q0E=}}}");
  EXPECT_TRUE(m.All("Certificate").empty());
  EXPECT_EQ(m.One("MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>(), "Q0E=");
}

}  // namespace
}  // namespace tessera::deploy
