// The chart's node agent: a DaemonSet on the GPU nodes running
// tessera-node-agent from Tessera's image, told its node through the downward
// API, given the driver by the NVIDIA container toolkit, allowed to read and
// patch nodes and nothing else, and kept out of the scheduler's selectors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ChartNodeAgent : public ChartTest {};

Manifests Rendered(std::string_view overrides = "", const Release& release = {}) {
  absl::StatusOr<Manifests> m = RenderChart(overrides, release);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Manifests{};
}

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const YAML::Node& item : list) out.push_back(item.as<std::string>());
  return out;
}

YAML::Node AgentContainer(const Manifests& m) {
  const YAML::Node ds = m.One("DaemonSet", "-node-agent");
  return ds["spec"]["template"]["spec"]["containers"][0];
}

std::string Env(const YAML::Node& container, const std::string& name) {
  for (const YAML::Node& e : container["env"]) {
    if (e["name"].as<std::string>() != name) continue;
    if (e["value"]) return e["value"].as<std::string>();
    return "fieldRef:" + e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
  }
  return "";
}

TEST_F(ChartNodeAgent, RunsTheAgentFromTesserasImageOnEveryGpuNode) {
  const Manifests m = Rendered("", {.name = "t", .namespace_name = "gpu-system"});
  const YAML::Node ds = m.One("DaemonSet", "-node-agent");
  EXPECT_EQ(ds["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(ds["metadata"]["name"].as<std::string>(), "t-tessera-node-agent");
  EXPECT_EQ(ds["metadata"]["namespace"].as<std::string>(), "gpu-system");
  const YAML::Node c = AgentContainer(m);
  EXPECT_EQ(c["image"].as<std::string>(), Container(m.One("Deployment"), "tessera")["image"].as<std::string>());
  EXPECT_THAT(Strings(c["command"]), ElementsAre("/usr/local/bin/tessera-node-agent"));
  EXPECT_EQ(FlagValue(c, "--interval"), "60s");
  EXPECT_EQ(FlagValue(c, "--nvml-library"), std::nullopt) << "the loader's path, where the toolkit puts the driver's";
  EXPECT_EQ(Env(c, "NODE_NAME"), "fieldRef:spec.nodeName");
  EXPECT_EQ(Env(c, "NVIDIA_VISIBLE_DEVICES"), "all");
  EXPECT_EQ(Env(c, "NVIDIA_DRIVER_CAPABILITIES"), "utility");

  const YAML::Node pod = ds["spec"]["template"]["spec"];
  const YAML::Node terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0]["matchExpressions"][0]["key"].as<std::string>(), "feature.node.kubernetes.io/pci-10de.present");
  EXPECT_EQ(terms[1]["matchExpressions"][0]["key"].as<std::string>(), "nvidia.com/gpu.present");
  EXPECT_EQ(pod["tolerations"][0]["key"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_FALSE(pod["runtimeClassName"].IsDefined());
}

TEST_F(ChartNodeAgent, RunsLockedDown) {
  const Manifests m = Rendered();
  const YAML::Node pod = m.One("DaemonSet", "-node-agent")["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  const YAML::Node c = AgentContainer(m);
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>());
  EXPECT_THAT(Strings(c["securityContext"]["capabilities"]["drop"]), ElementsAre("ALL"));
  EXPECT_FALSE(pod["hostNetwork"].IsDefined());
  EXPECT_FALSE(pod["volumes"].IsDefined()) << "the toolkit brings the driver: no hostPath";
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), "128Mi");
}

TEST_F(ChartNodeAgent, MayReadAndPatchNodesAndNothingElse) {
  const Manifests m = Rendered("", {.name = "t", .namespace_name = "gpu-system"});
  const YAML::Node role = m.One("ClusterRole", "-node-agent");
  ASSERT_EQ(role["rules"].size(), 1u);
  EXPECT_THAT(Strings(role["rules"][0]["apiGroups"]), ElementsAre(""));
  EXPECT_THAT(Strings(role["rules"][0]["resources"]), ElementsAre("nodes"));
  EXPECT_THAT(Strings(role["rules"][0]["verbs"]), ElementsAre("get", "patch"));
  const YAML::Node binding = m.One("ClusterRoleBinding", "-node-agent");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "t-tessera-node-agent");
  const std::string sa = m.One("DaemonSet", "-node-agent")["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>();
  EXPECT_EQ(sa, "t-tessera-node-agent");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), sa);
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), "gpu-system");
  EXPECT_EQ(m.One("ServiceAccount", "-node-agent")["metadata"]["namespace"].as<std::string>(), "gpu-system");
  // The scheduler's account does not gain the patch.
  for (const YAML::Node& r : m.One("ClusterRole", "-extender")["rules"]) {
    if (Strings(r["resources"]) == std::vector<std::string>{"nodes"}) {
      EXPECT_THAT(Strings(r["verbs"]), ElementsAre("get", "list", "watch"));
    }
  }
}

TEST_F(ChartNodeAgent, ItsPodsAreNotTakenForSchedulerPods) {
  const Manifests m = Rendered();
  const YAML::Node labels = m.One("DaemonSet", "-node-agent")["spec"]["template"]["metadata"]["labels"];
  const auto selects_agent = [&](const YAML::Node& selector) {
    for (auto kv : selector) {
      const YAML::Node v = labels[kv.first.as<std::string>()];
      if (!v.IsDefined() || v.as<std::string>() != kv.second.as<std::string>()) return false;
    }
    return true;
  };
  EXPECT_FALSE(selects_agent(m.One("Service", "-metrics")["spec"]["selector"]));
  EXPECT_FALSE(selects_agent(m.One("PodDisruptionBudget")["spec"]["selector"]["matchLabels"]));
  EXPECT_FALSE(selects_agent(m.One("NetworkPolicy")["spec"]["podSelector"]["matchLabels"]));
  EXPECT_FALSE(selects_agent(m.One("Deployment")["spec"]["selector"]["matchLabels"]));
  EXPECT_TRUE(selects_agent(m.One("DaemonSet", "-node-agent")["spec"]["selector"]["matchLabels"]));
}

TEST_F(ChartNodeAgent, TakesItsSettingsFromValues) {
  const Manifests m = Rendered(R"(
nodeAgent:
  interval: 30s
  nvmlLibrary: /run/nvidia/driver/usr/lib64/libnvidia-ml.so.1
  runtimeClassName: nvidia
  ignoredXids: "94,95"
  image: {repository: registry.example.com/agent, tag: "1.2.3"}
  extraArgs: ["--kube-context=x"]
  priorityClassName: system-node-critical
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}]}}}
)");
  const YAML::Node pod = m.One("DaemonSet", "-node-agent")["spec"]["template"]["spec"];
  const YAML::Node c = AgentContainer(m);
  EXPECT_EQ(FlagValue(c, "--interval"), "30s");
  EXPECT_EQ(FlagValue(c, "--nvml-library"), "/run/nvidia/driver/usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(FlagValue(c, "--ignored-xids"), "94,95");
  EXPECT_EQ(FlagValue(c, "--kube-context"), "x");
  EXPECT_EQ(c["image"].as<std::string>(), "registry.example.com/agent:1.2.3");
  EXPECT_EQ(pod["runtimeClassName"].as<std::string>(), "nvidia");
  EXPECT_EQ(pod["priorityClassName"].as<std::string>(), "system-node-critical");
  const YAML::Node terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["matchExpressions"][0]["key"].as<std::string>(), "pool");
}

TEST_F(ChartNodeAgent, CanBeLeftOut) {
  const Manifests m = Rendered("{nodeAgent: {enabled: false}}");
  EXPECT_THAT(m.All("DaemonSet"), IsEmpty());
  for (const char* kind : {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}) {
    for (const YAML::Node& o : m.All(kind)) {
      EXPECT_THAT(o["metadata"]["name"].as<std::string>(), ::testing::Not(HasSubstr("node-agent"))) << kind;
    }
  }
}

TEST_F(ChartNodeAgent, UsesTheInstallersAccountWhenTheChartCreatesNone) {
  const Manifests m = Rendered("{rbac: {create: false}, serviceAccount: {create: false, name: gpu-scheduler}}");
  EXPECT_EQ(m.One("DaemonSet", "-node-agent")["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>(),
            "gpu-scheduler");
  const Manifests own = Rendered("{nodeAgent: {serviceAccountName: gpu-agent}}");
  EXPECT_EQ(own.One("DaemonSet", "-node-agent")["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>(),
            "gpu-agent");
  EXPECT_EQ(own.One("ClusterRoleBinding", "-node-agent")["subjects"][0]["name"].as<std::string>(), "gpu-agent");
  for (const YAML::Node& sa : own.All("ServiceAccount")) {
    EXPECT_NE(sa["metadata"]["name"].as<std::string>(), "gpu-agent") << "the installer's: not created";
  }
}

}  // namespace
}  // namespace tessera::deploy
