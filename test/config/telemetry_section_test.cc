// The policy file's `telemetry:` section: defaults, every field, and errors
// with file:line:col like the rest of the policy file.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/policy_loader.h"
#include "config/policy_store.h"
#include "policies/builtin_registry.h"
#include "test/testing/policy_document.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

const std::string kHead = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
  - name: load-aware
)";

absl::StatusOr<LoadedPolicy> Load(const std::string& telemetry) { return testing::LoadWithBuiltins(kHead + telemetry); }

TEST(TelemetrySection, AbsentMeansNoTelemetry) {
  absl::StatusOr<LoadedPolicy> p = Load("");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->telemetry.has_value());
  EXPECT_EQ(p->profile->PluginNames(), (std::vector<std::string>{"gpu-share", "load-aware"}));
}

TEST(TelemetrySection, EmptyMeansDefaultsWithAnnotationsOnly) {
  absl::StatusOr<LoadedPolicy> p = Load("telemetry: {}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->telemetry.has_value());
  EXPECT_EQ(*p->telemetry, TelemetrySettings{});
  EXPECT_EQ(p->telemetry->refresh_interval, absl::Seconds(15));
  EXPECT_EQ(p->telemetry->stale_after, absl::Minutes(3));
  EXPECT_TRUE(p->telemetry->node_annotations);
  EXPECT_FALSE(p->telemetry->prometheus.has_value());
}

TEST(TelemetrySection, ReadsEveryField) {
  absl::StatusOr<LoadedPolicy> p = Load(R"(telemetry:
  refreshInterval: 5s
  staleAfter: 1m30s
  nodeAnnotations: false
  prometheus:
    url: http://prometheus.monitoring:9090/
    timeout: 2s
    labels: {node: kubernetes_node, uuid: UUID, gpu: gpu_index}
    queries:
      utilization: max_over_time(DCGM_FI_DEV_GPU_UTIL[30s])
      sustainedUtilization: quantile_over_time(0.95, DCGM_FI_DEV_GPU_UTIL[10m])
      smActive: avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1m])
      memoryFree: ""
    windows: {utilization: 30s max, sustainedUtilization: 10m p95}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  const TelemetrySettings& t = *p->telemetry;
  EXPECT_EQ(t.refresh_interval, absl::Seconds(5));
  EXPECT_EQ(t.stale_after, absl::Seconds(90));
  EXPECT_FALSE(t.node_annotations);
  ASSERT_TRUE(t.prometheus.has_value());
  const PrometheusSettings& prom = *t.prometheus;
  EXPECT_EQ(prom.url, "http://prometheus.monitoring:9090/");
  EXPECT_EQ(prom.timeout, absl::Seconds(2));
  EXPECT_EQ(prom.node_label, "kubernetes_node");
  EXPECT_EQ(prom.gpu_label, "gpu_index");
  EXPECT_EQ(prom.queries.utilization, "max_over_time(DCGM_FI_DEV_GPU_UTIL[30s])");
  EXPECT_EQ(prom.queries.sustained_utilization, "quantile_over_time(0.95, DCGM_FI_DEV_GPU_UTIL[10m])");
  EXPECT_EQ(prom.queries.sm_active, "avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1m])");
  EXPECT_EQ(prom.queries.memory_used, "DCGM_FI_DEV_FB_USED");  // default kept
  EXPECT_EQ(prom.queries.memory_free, "");                     // switched off
  EXPECT_EQ(prom.queries.sample_time, "timestamp(DCGM_FI_DEV_GPU_UTIL)");
  EXPECT_EQ(prom.utilization_window, "30s max");
  EXPECT_EQ(prom.sustained_window, "10m p95");
}

TEST(TelemetrySection, ReportsEveryErrorWithItsPosition) {
  absl::StatusOr<LoadedPolicy> p = Load(R"(telemetry:
  refreshInterval: soon
  staleAfter: 0s
  nodeAnnotations: yes
  prometheus:
    url: https://prometheus:9090
    labels: {node: "host name"}
    queries: {utilization: "", memoryUsed: [a]}
    typo: 1
)");
  ASSERT_FALSE(p.ok());
  const std::string m(p.status().message());
  EXPECT_THAT(m, HasSubstr("policy.yaml:7:20: telemetry.refreshInterval: must be a duration in 1s..1h"));
  EXPECT_THAT(m, HasSubstr("policy.yaml:8:15: telemetry.staleAfter: must be a duration in 1s..24h"));
  EXPECT_THAT(m, HasSubstr("policy.yaml:9:20: telemetry.nodeAnnotations: must be true or false; got \"yes\""));
  EXPECT_THAT(m, HasSubstr("policy.yaml:11:10: telemetry.prometheus.url: must start with http://"));
  EXPECT_THAT(m, HasSubstr("policy.yaml:12:20: telemetry.prometheus.labels.node: must be a Prometheus label name"));
  EXPECT_THAT(m, HasSubstr("telemetry.prometheus.queries.utilization: must be a non-empty string"));
  EXPECT_THAT(m, HasSubstr("telemetry.prometheus.queries.memoryUsed: must be a string; got a list"));
  EXPECT_THAT(m, HasSubstr("policy.yaml:14:5: telemetry.prometheus.typo: unknown field"));
}

TEST(TelemetrySection, RequiresAUrlAndATtlNoShorterThanTheInterval) {
  absl::StatusOr<LoadedPolicy> p = Load("telemetry:\n  refreshInterval: 1m\n  staleAfter: 30s\n  prometheus: {}\n");
  ASSERT_FALSE(p.ok());
  const std::string m(p.status().message());
  EXPECT_THAT(m, HasSubstr("telemetry.staleAfter: must be at least refreshInterval (1m)"));
  EXPECT_THAT(m, HasSubstr("telemetry.prometheus.url: required"));
  EXPECT_FALSE(Load("telemetry: [1]\n").ok());
}

TEST(TelemetrySection, ThePolicyStorePublishesItWithTheProfileAndKeepsItOnABadReload) {
  const PluginRegistry registry = NewBuiltinRegistry();
  char dir_template[] = "/tmp/tessera-telemetry-store-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/policy.yaml";
  auto write = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };

  write(kHead + "telemetry:\n  refreshInterval: 5s\n");
  std::vector<absl::Status> reloads;
  absl::StatusOr<std::unique_ptr<PolicyStore>> store =
      PolicyStore::Open(path, registry, [&](const absl::Status& s) { reloads.push_back(s); });
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->CurrentTelemetry().has_value());
  EXPECT_EQ((*store)->CurrentTelemetry()->refresh_interval, absl::Seconds(5));

  write(kHead + "telemetry:\n  refreshInterval: 7s\n");
  ASSERT_TRUE((*store)->Reload().ok());
  EXPECT_EQ((*store)->CurrentTelemetry()->refresh_interval, absl::Seconds(7));

  write(kHead + "telemetry:\n  refreshInterval: never\n");
  EXPECT_FALSE((*store)->Reload().ok());
  EXPECT_EQ((*store)->CurrentTelemetry()->refresh_interval, absl::Seconds(7));

  write(kHead);
  ASSERT_TRUE((*store)->Reload().ok());
  EXPECT_FALSE((*store)->CurrentTelemetry().has_value());
  EXPECT_EQ(reloads.size(), 3u);
  std::filesystem::remove_all(dir_template);
}

TEST(TelemetrySection, TheShippedLoadAwareExampleLoads) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile =
      LoadPolicyFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/load-aware-policy.yaml", registry);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ((*profile)->PluginNames(), (std::vector<std::string>{"gpu-share", "load-aware"}));
}

}  // namespace
}  // namespace tessera
