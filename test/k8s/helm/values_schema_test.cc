// values.schema.json, as the real Helm applies it at install, upgrade, lint
// and template: it accepts the shipped values.yaml and refuses wrong values
// with a message that names the value (Helm's "at '/path'").
#include <fstream>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/k8s/helm/chart_fixture.h"

namespace tessera::deploy {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

nlohmann::json ReadSchema() {
  std::ifstream in(kChartDir + "/values.schema.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

// --- the schema's own shape (no Helm needed) ---------------------------------------

TEST(ValuesSchema, IsDraft07) { EXPECT_EQ(ReadSchema()["$schema"], "http://json-schema.org/draft-07/schema#"); }

TEST(ValuesSchema, DescribesEveryShippedValue) {
  // Every value in values.yaml has a schema with a description, so a typo in a
  // key of the user's file is an unknown key, not a silently ignored one.
  const nlohmann::json schema = ReadSchema();
  std::vector<std::string> undescribed;
  std::function<void(const nlohmann::json&, const YAML::Node&, const std::string&)> walk =
      [&](const nlohmann::json& s, const YAML::Node& v, const std::string& path) {
        if (!v.IsMap() || !s.contains("properties")) return;
        for (auto kv : v) {
          const std::string key = kv.first.as<std::string>();
          const std::string p = path.empty() ? key : path + "." + key;
          if (!s["properties"].contains(key)) {
            undescribed.push_back(p);
            continue;
          }
          const nlohmann::json& cs = s["properties"][key];
          if (!cs.contains("description") && !cs.contains("properties")) undescribed.push_back(p);
          walk(cs, kv.second, p);
        }
      };
  walk(schema, YAML::LoadFile(kChartDir + "/values.yaml"), "");
  EXPECT_THAT(undescribed, IsEmpty());
}

// --- under Helm ---------------------------------------------------------------------

class ValuesSchemaUnderHelm : public ChartTest {};

TEST_F(ValuesSchemaUnderHelm, LintStrictAcceptsTheShippedValues) {
  const ProgramResult r = RunProgram(
      HelmBinary(), {"lint", "--strict", kChartDir, "--set", absl::StrCat("tessera.image.repository=", Absl(kTesseraImage))});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 chart(s) linted, 0 chart(s) failed"));
}

TEST_F(ValuesSchemaUnderHelm, LintStrictRefusesWrongValuesNamingThem) {
  const ScratchFile values("{tessera: {port: 70000}}\n");
  const ProgramResult r =
      RunProgram(HelmBinary(), {"lint", "--strict", kChartDir, "--set",
                                absl::StrCat("tessera.image.repository=", Absl(kTesseraImage)), "--values", values.path()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("at '/tessera/port'"));
}

struct BrokenValues {
  const char* name;
  const char* overrides;  // a --values file on top of values.yaml
  const char* path;       // the value Helm must name, as "at '<path>'"
  const char* error;      // and what it must say about it
};

void PrintTo(const BrokenValues& c, std::ostream* os) { *os << c.overrides; }

class ValuesSchemaRejects : public ChartTest, public ::testing::WithParamInterface<BrokenValues> {};

TEST_P(ValuesSchemaRejects, Case) {
  const BrokenValues& c = GetParam();
  const absl::StatusOr<Manifests> m = RenderChart(c.overrides);
  ASSERT_FALSE(m.ok()) << "helm template accepted " << c.overrides;
  EXPECT_THAT(std::string(m.status().message()),
              AllOf(HasSubstr("don't meet the specifications of the schema"), HasSubstr(absl::StrCat("at '", c.path, "': ")),
                    HasSubstr(c.error)));
}

INSTANTIATE_TEST_SUITE_P(
    ValuesSchema, ValuesSchemaRejects,
    ::testing::Values(
        BrokenValues{"ReplicasAsText", "{replicaCount: two}", "/replicaCount", "got string, want integer"},
        BrokenValues{"NoReplicas", "{replicaCount: 0}", "/replicaCount", "minimum: got 0, want 1"},
        BrokenValues{"SchedulerNameNotADnsName", "{schedulerName: Tessera_Scheduler}", "/schedulerName",
                     "does not match pattern"},
        // YAML reads an unquoted 123 as a number; a name must be quoted.
        BrokenValues{"SchedulerNameANumber", "{schedulerName: 123}", "/schedulerName", "got number, want string"},
        BrokenValues{"ImageTagANumber", "{tessera: {image: {tag: 1.30}}}", "/tessera/image/tag", "got number, want string"},
        BrokenValues{"IgnoredXidsANumber", "{nodeAgent: {ignoredXids: 94}}", "/nodeAgent/ignoredXids",
                     "got number, want string"},
        BrokenValues{"PortOutOfRange", "{tessera: {port: 70000}}", "/tessera/port", "maximum: got 70,000, want 65,535"},
        BrokenValues{"PortAsText", "{tessera: {port: '8888'}}", "/tessera/port", "got string, want integer"},
        BrokenValues{"MistypedKey", "{tessera: {prot: 9000}}", "/tessera", "additional properties 'prot' not allowed"},
        BrokenValues{"UnknownTopLevelKey", "{replicas: 3}", "", "additional properties 'replicas' not allowed"},
        BrokenValues{"ZeroWeight", "{extender: {weight: 0}}", "/extender/weight", "minimum: got 0, want 1"},
        BrokenValues{"TimeoutWithoutUnit", "{extender: {httpTimeout: '5'}}", "/extender/httpTimeout", "does not match pattern"},
        BrokenValues{"TimeoutANumber", "{extender: {httpTimeout: 5}}", "/extender/httpTimeout", "got number, want string"},
        BrokenValues{"TimeoutInWords", "{extender: {httpTimeout: 5 seconds}}", "/extender/httpTimeout",
                     "does not match pattern"},
        BrokenValues{"KubeSchedulerTooOld", "{kubeScheduler: {image: {tag: v1.24.9}}}", "/kubeScheduler/image/tag",
                     "does not match pattern"},
        BrokenValues{"KubeSchedulerTagWithoutV", "{kubeScheduler: {image: {tag: 1.30.4}}}", "/kubeScheduler/image/tag",
                     "does not match pattern"},
        BrokenValues{"PullPolicyMisspelt", "{tessera: {image: {pullPolicy: ifNotPresent}}}", "/tessera/image/pullPolicy",
                     "value must be one of"},
        BrokenValues{"ListenAddressNotAnIp", "{tessera: {listenAddress: localhost}}", "/tessera/listenAddress",
                     "does not match pattern"},
        BrokenValues{"EmptyPolicy", "{tessera: {policy: ''}}", "/tessera/policy", "minLength: got 0, want 1"},
        BrokenValues{"ManagedResourceWithoutName", "{extender: {managedResources: [{ignoredByScheduler: true}]}}",
                     "/extender/managedResources/0", "missing property 'name'"},
        // kube-scheduler takes a name without a domain for a native resource
        // (cpu, memory), which it never leaves to an extender.
        BrokenValues{"ManagedResourceWithoutDomain", "{extender: {managedResources: [{name: gpu-milli}]}}",
                     "/extender/managedResources/0/name", "does not match pattern"},
        BrokenValues{"ExtraArgNotAFlag", "{tessera: {extraArgs: [verbose]}}", "/tessera/extraArgs/0", "does not match pattern"},
        BrokenValues{"MemoryLimitNotAQuantity", "{tessera: {resources: {limits: {memory: 2 GB}}}}",
                     "/tessera/resources/limits/memory", "does not match pattern"},
        BrokenValues{"ServiceTypeUnknown", "{metrics: {service: {type: Ingress}}}", "/metrics/service/type",
                     "value must be one of"},
        // Prometheus durations: whole numbers, units in order, none twice.
        BrokenValues{"ScrapeIntervalAFraction", "{metrics: {serviceMonitor: {interval: 1.5s}}}",
                     "/metrics/serviceMonitor/interval", "does not match pattern"},
        BrokenValues{"ScrapeIntervalUnitsOutOfOrder", "{metrics: {serviceMonitor: {interval: 30s1m}}}",
                     "/metrics/serviceMonitor/interval", "does not match pattern"},
        BrokenValues{"ScrapeIntervalEmpty", "{metrics: {serviceMonitor: {interval: ''}}}",
                     "/metrics/serviceMonitor/interval", "minLength: got 0, want 2"},
        BrokenValues{"ScrapeTimeoutWithoutUnit", "{metrics: {serviceMonitor: {scrapeTimeout: '10'}}}",
                     "/metrics/serviceMonitor/scrapeTimeout", "does not match pattern"},
        BrokenValues{"LabelValueNotText", "{commonLabels: {team: {name: gpu}}}", "/commonLabels/team",
                     "got object, want string"}),
    [](const ::testing::TestParamInfo<BrokenValues>& info) { return info.param.name; });

// What the schema cannot say (it compares no two values): the templates refuse it.
struct RefusedCombination {
  const char* name;
  const char* overrides;
  const char* error;
};

void PrintTo(const RefusedCombination& c, std::ostream* os) { *os << c.overrides; }

class ChartRefuses : public ChartTest, public ::testing::WithParamInterface<RefusedCombination> {};

TEST_P(ChartRefuses, Case) {
  const RefusedCombination& c = GetParam();
  const absl::StatusOr<Manifests> m =
      RenderChart(c.overrides, {.api_versions = {"cert-manager.io/v1", "monitoring.coreos.com/v1"}});
  ASSERT_FALSE(m.ok()) << "helm template accepted " << c.overrides;
  EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.error));
}

INSTANTIATE_TEST_SUITE_P(
    Chart, ChartRefuses,
    ::testing::Values(
        RefusedCombination{"RenewDeadlineAboveTheLease", "{kubeScheduler: {leaderElection: {renewDeadline: 20s}}}",
                           "renewDeadline (20s) must be below leaseDuration (15s)"},
        RefusedCombination{"RenewDeadlineEqualToTheLease",
                           "{kubeScheduler: {leaderElection: {leaseDuration: 1m, renewDeadline: 60000ms}}}",
                           "renewDeadline (60000ms) must be below leaseDuration (1m)"},
        RefusedCombination{"RenewDeadlineWithinRetries", "{kubeScheduler: {leaderElection: {renewDeadline: 2400ms}}}",
                           "renewDeadline (2400ms) must be above 1.2 x retryPeriod (2s)"},
        RefusedCombination{"ScrapeTimeoutAboveTheInterval",
                           "{metrics: {serviceMonitor: {enabled: true, interval: 1m, scrapeTimeout: 1m30s}}}",
                           "scrapeTimeout (1m30s) must not exceed its interval (1m)"}),
    [](const ::testing::TestParamInfo<RefusedCombination>& info) { return info.param.name; });

TEST_F(ValuesSchemaUnderHelm, DurationsCloseToTheLimitsPass) {
  // The template compares durations in any of Go's spellings, fractions included.
  EXPECT_TRUE(RenderChart("{kubeScheduler: {leaderElection: {leaseDuration: 1m, renewDeadline: 59.5s}}}").ok());
  EXPECT_TRUE(RenderChart("{kubeScheduler: {leaderElection: {leaseDuration: 1h, renewDeadline: 59m59s, retryPeriod: 1m}}}").ok());
  EXPECT_TRUE(RenderChart("{kubeScheduler: {leaderElection: {renewDeadline: 2500ms}}}").ok());
  EXPECT_TRUE(RenderChart("{metrics: {serviceMonitor: {enabled: true, interval: 1m, scrapeTimeout: 60s}}}",
                          {.api_versions = {"monitoring.coreos.com/v1"}})
                  .ok());
}

}  // namespace
}  // namespace tessera::deploy
