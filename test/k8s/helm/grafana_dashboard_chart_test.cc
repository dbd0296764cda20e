// The chart's Grafana dashboard ConfigMap (templates/grafana-dashboard.yaml):
// on by default, labelled for Grafana's dashboard sidecar, holding exactly
// dashboards/tessera.json; label, namespace and annotations configurable.
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

std::string DashboardFile() {
  std::ifstream in(kChartDir + "/dashboards/tessera.json");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Without helm: skipped saying so (failed under CI=true), as every chart test.
class GrafanaDashboardChart : public ChartTest {};

TEST_F(GrafanaDashboardChart, ByDefaultAConfigMapForKubePrometheusStacksSidecarHoldsTheDashboard) {
  absl::StatusOr<Manifests> m = RenderChart();
  ASSERT_TRUE(m.ok()) << m.status();
  const YAML::Node cm = m->One("ConfigMap", "-dashboard");
  ASSERT_TRUE(cm.IsMap());
  EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "tessera-system");
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>(), "1");
  EXPECT_EQ(cm["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>(), "tessera");
  const std::string json = cm["data"]["tessera.json"].as<std::string>();
  std::string file = DashboardFile();
  while (!file.empty() && file.back() == '\n') file.pop_back();  // the block scalar's |- drops it
  EXPECT_EQ(json, file) << "the ConfigMap holds the dashboard file as it is";
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << "the ConfigMap's dashboard is not JSON";
  EXPECT_EQ(parsed["uid"], "tessera-gpu-scheduler");
  EXPECT_LT(json.size(), 256u * 1024) << "well inside a ConfigMap's 1 MiB";
}

TEST_F(GrafanaDashboardChart, LabelNamespaceAndAnnotationsFollowTheValues) {
  absl::StatusOr<Manifests> m = RenderChart(R"(metrics:
  grafanaDashboard:
    namespace: monitoring
    label: grafana.example.com/dashboard
    labelValue: tessera
    annotations: {grafana_folder: GPU}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const YAML::Node cm = m->One("ConfigMap", "-dashboard");
  ASSERT_TRUE(cm.IsMap());
  EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "monitoring");
  EXPECT_EQ(cm["metadata"]["labels"]["grafana.example.com/dashboard"].as<std::string>(), "tessera");
  EXPECT_FALSE(cm["metadata"]["labels"]["grafana_dashboard"]) << "only the configured label";
  EXPECT_EQ(cm["metadata"]["annotations"]["grafana_folder"].as<std::string>(), "GPU");
}

TEST_F(GrafanaDashboardChart, DisabledThereIsNoConfigMap) {
  absl::StatusOr<Manifests> m = RenderChart("metrics: {grafanaDashboard: {enabled: false}}");
  ASSERT_TRUE(m.ok()) << m.status();
  for (const YAML::Node& cm : m->All("ConfigMap")) {
    EXPECT_FALSE(absl::EndsWith(cm["metadata"]["name"].as<std::string>(), "-dashboard"));
  }
}

}  // namespace
}  // namespace tessera::deploy
