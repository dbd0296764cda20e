// kube-scheduler's configuration must call Tessera where Tessera answers: the
// verbs it names are routes of Tessera's router, at the port and path prefix
// Tessera is started with, and it sends what Tessera expects (node names only,
// every pod of the profile, Tessera as the binder). Checked for the chart's
// ConfigMap against the chart's Deployment, and for the example
// configuration in config/examples/ against Tessera's defaults.
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "extender/service/router.h"
#include "test/k8s/helm/chart_fixture.h"
#include "test/testing/service_fixture.h"

namespace tessera::deploy {
namespace {

namespace http = boost::beast::http;
using ::testing::AnyOf;
using ::testing::Not;

constexpr const char* kCluster = R"(
nodes:
  - {name: a100-1, labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.memory: "81920"}}
)";

// A request body for each verb, as kube-scheduler sends it with nodeCacheCapable: true.
std::string BodyFor(std::string_view verb) {
  const nlohmann::json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u-1"}, {"annotations", {{"tessera.io/gpu-fraction", "0.25"}}}}},
      {"spec", {{"schedulerName", "tessera-scheduler"}}}};
  if (verb == "bind") {
    return nlohmann::json{{"PodName", "p"}, {"PodNamespace", "ml"}, {"PodUID", "u-1"}, {"Node", "a100-1"}}.dump();
  }
  if (verb == "preempt") {
    return nlohmann::json{{"Pod", pod},
                          {"NodeNameToMetaVictims", {{"a100-1", {{"Pods", nlohmann::json::array()}, {"NumPDBViolations", 0}}}}}}
        .dump();
  }
  return nlohmann::json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"a100-1"}}}.dump();
}

struct Endpoint {
  std::string host;
  int port = 0;
  std::string path;  // "" or "/prefix"
};

std::optional<Endpoint> ParseUrlPrefix(const std::string& url) {
  static const std::regex kUrl(R"(^http://([^/:]+):([0-9]+)(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) return std::nullopt;
  Endpoint e{m[1], std::stoi(m[2]), m[3]};
  while (!e.path.empty() && e.path.back() == '/') e.path.pop_back();
  return e;
}

/// Checks a KubeSchedulerConfiguration against a Tessera listening on
/// 127.0.0.1:`tessera_port` with `--url-prefix=tessera_url_prefix`.
void ExpectAgreesWithTessera(const YAML::Node& config, int tessera_port, const std::string& tessera_url_prefix) {
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(config["kind"].as<std::string>(), "KubeSchedulerConfiguration");

  // One profile for GPU pods, scoring every feasible node (top level, or in the profile).
  ASSERT_EQ(config["profiles"].size(), 1u);
  const YAML::Node profile = config["profiles"][0];
  EXPECT_EQ(profile["schedulerName"].as<std::string>(), "tessera-scheduler");
  const YAML::Node percentage = profile["percentageOfNodesToScore"] ? profile["percentageOfNodesToScore"]
                                                                    : config["percentageOfNodesToScore"];
  ASSERT_TRUE(percentage.IsDefined() && !percentage.IsNull()) << "percentageOfNodesToScore is not set";
  EXPECT_EQ(percentage.as<int>(), 100);
  EXPECT_TRUE(config["leaderElection"]["leaderElect"].as<bool>());

  ASSERT_EQ(config["extenders"].size(), 1u);
  const YAML::Node extender = config["extenders"][0];
  const std::optional<Endpoint> url = ParseUrlPrefix(extender["urlPrefix"].as<std::string>());
  ASSERT_TRUE(url.has_value()) << "urlPrefix must be http://host:port[/path]: " << extender["urlPrefix"];
  EXPECT_EQ(url->host, "127.0.0.1") << "Tessera runs in the scheduler's pod";
  EXPECT_EQ(url->port, tessera_port);
  EXPECT_EQ(url->path, tessera_url_prefix);
  EXPECT_FALSE(extender["enableHTTPS"] && extender["enableHTTPS"].as<bool>())
      << "by default Tessera speaks plain HTTP on loopback (tessera.tls: extender_tls_chart_test.cc)";

  // Tessera watches the cluster (names only on the wire) and binds.
  EXPECT_TRUE(extender["nodeCacheCapable"].as<bool>());
  EXPECT_EQ(extender["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(extender["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(extender["bindVerb"].as<std::string>(), "bind");
  // Without it kube-scheduler's preemption evicts by priority alone and never
  // asks which victims free one GPU (issue 42: 5 pods on 4 GPUs instead of 2 on one).
  ASSERT_TRUE(extender["preemptVerb"].IsDefined()) << "kube-scheduler must ask Tessera which victims free a GPU";
  EXPECT_EQ(extender["preemptVerb"].as<std::string>(), "preempt");
  EXPECT_GT(extender["weight"].as<int>(), 0) << "prioritize needs a positive weight";
  EXPECT_FALSE(extender["ignorable"].IsDefined() && extender["ignorable"].as<bool>())
      << "an ignorable extender would let GPU pods be placed without their GPUs";
  // Pods ask for GPUs with annotations, not extended resources: with
  // managedResources set, kube-scheduler would send Tessera only the pods
  // requesting those resources.
  EXPECT_TRUE(!extender["managedResources"].IsDefined() || extender["managedResources"].size() == 0);

  // Every verb named is a route Tessera serves there.
  testing::ServiceFixture fixture(kCluster);
  const Router router(RouterOptions{.url_prefix = tessera_url_prefix}, fixture.service(), fixture.metrics());
  for (const char* key : {"filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb"}) {
    const std::string verb = extender[key].as<std::string>();
    // kube-scheduler's URL: strings.TrimRight(urlPrefix, "/") + "/" + verb.
    HttpRequest request(http::verb::post, absl::StrCat(url->path, "/", verb), 11);
    request.set(http::field::content_type, "application/json");
    request.body() = BodyFor(verb);
    request.prepare_payload();
    const HttpResponse response = router.Handle(request);
    EXPECT_THAT(response.result_int(), Not(AnyOf(404, 405))) << key << " " << request.target() << ": " << response.body();
    if (verb != "bind") {  // bind needs the API server; here it answers 501
      EXPECT_EQ(response.result_int(), 200) << request.target() << ": " << response.body();
    }
  }
}

class ChartSchedulerConfig : public ChartTest {};

TEST_F(ChartSchedulerConfig, AgreesWithTheTesseraContainerBesideIt) {
  absl::StatusOr<Manifests> m = RenderChart();
  ASSERT_TRUE(m.ok()) << m.status();
  const YAML::Node tessera = Container(m->One("Deployment"), "tessera");
  const std::optional<std::string> port = FlagValue(tessera, "--port");
  ASSERT_TRUE(port.has_value());
  EXPECT_EQ(*port, YAML::LoadFile(kChartDir + "/values.yaml")["tessera"]["port"].as<std::string>());
  const std::optional<std::string> address = FlagValue(tessera, "--address");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(*address, "127.0.0.1") << "kube-scheduler calls Tessera over loopback; nothing else reaches the verbs";

  const YAML::Node config =
      YAML::Load(m->One("ConfigMap", "-scheduler-config")["data"]["scheduler-config.yaml"].as<std::string>());
  ExpectAgreesWithTessera(config, std::stoi(*port), FlagValue(tessera, "--url-prefix").value_or(""));
}

TEST_F(ChartSchedulerConfig, FollowsTheValues) {
  absl::StatusOr<Manifests> m = RenderChart(R"(
schedulerName: tessera-scheduler
tessera: {port: 9443}
extender: {weight: 7, httpTimeout: 3s}
kubeScheduler: {leaderElection: {resourceName: gpu-lease, resourceNamespace: kube-system}}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const YAML::Node tessera = Container(m->One("Deployment"), "tessera");
  EXPECT_EQ(FlagValue(tessera, "--port"), "9443");
  const YAML::Node config =
      YAML::Load(m->One("ConfigMap", "-scheduler-config")["data"]["scheduler-config.yaml"].as<std::string>());
  ExpectAgreesWithTessera(config, 9443, "");
  EXPECT_EQ(config["extenders"][0]["weight"].as<int>(), 7);
  EXPECT_EQ(config["extenders"][0]["httpTimeout"].as<std::string>(), "3s");
  EXPECT_EQ(config["leaderElection"]["resourceName"].as<std::string>(), "gpu-lease");
  EXPECT_EQ(config["leaderElection"]["resourceNamespace"].as<std::string>(), "kube-system");
}

TEST_F(ChartSchedulerConfig, ProbesUseRoutesTesseraServes) {
  absl::StatusOr<Manifests> m = RenderChart();
  ASSERT_TRUE(m.ok()) << m.status();
  const YAML::Node tessera = Container(m->One("Deployment"), "tessera");
  testing::ServiceFixture fixture(kCluster);
  const Router router(RouterOptions{}, fixture.service(), fixture.metrics());
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    const YAML::Node get = tessera[probe]["httpGet"];
    EXPECT_EQ(get["port"].as<std::string>(), "http-readonly") << "the plain-HTTP port on the pod IP";
    EXPECT_FALSE(get["scheme"].IsDefined() && get["scheme"].as<std::string>() != "HTTP");
    HttpRequest request(http::verb::get, get["path"].as<std::string>(), 11);
    EXPECT_EQ(router.Handle(request).result_int(), 200) << probe << " " << get["path"];
  }
  EXPECT_EQ(tessera["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(tessera["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
}

// The port Tessera listens on when --port is not given (extender/flags.cc).
int TesseraDefaultPort() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/extender/flags.cc");
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  std::smatch m;
  if (!std::regex_search(source, m, std::regex(R"(ABSL_FLAG\(int,\s*port,\s*([0-9]+))"))) {
    ADD_FAILURE() << "no ABSL_FLAG(int, port, ...) in extender/flags.cc";
    return -1;
  }
  return std::stoi(m[1]);
}

TEST(ExampleSchedulerConfig, AgreesWithTesseraStartedWithItsDefaults) {
  const YAML::Node config = YAML::LoadFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/kube-scheduler-config.yaml");
  ExpectAgreesWithTessera(config, TesseraDefaultPort(), "");
}

}  // namespace
}  // namespace tessera::deploy
