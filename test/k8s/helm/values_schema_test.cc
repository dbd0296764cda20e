// values.schema.json: Helm checks values against it at install and upgrade.
// It must accept the shipped values.yaml and reject wrong values with a
// message that names the value.
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/k8s/helm/chart_fixture.h"
#include "test/k8s/helm/json_schema.h"

namespace tessera::deploy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

nlohmann::json ReadSchema() {
  std::ifstream in(kChartDir + "/values.schema.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

nlohmann::json ShippedValues() { return YamlToJson(YAML::LoadFile(kChartDir + "/values.yaml")); }

// --- the validator itself: each keyword is enforced --------------------------

struct KeywordCase {
  const char* name;
  const char* schema;
  const char* value;
  const char* error;  // "" when valid
};

class ValidatorKeyword : public ::testing::TestWithParam<KeywordCase> {};

TEST_P(ValidatorKeyword, Case) {
  const KeywordCase& c = GetParam();
  const std::vector<std::string> errors = ValidateJsonSchema(nlohmann::json::parse(c.schema), nlohmann::json::parse(c.value));
  if (std::string(c.error).empty()) {
    EXPECT_THAT(errors, IsEmpty());
  } else {
    EXPECT_THAT(errors, ElementsAre(HasSubstr(c.error)));
  }
}

INSTANTIATE_TEST_SUITE_P(
    JsonSchema, ValidatorKeyword,
    ::testing::Values(
        KeywordCase{"TypeMatches", R"({"type":"integer"})", "3", ""},
        KeywordCase{"TypeMismatch", R"({"type":"integer"})", R"("3")", "must be of type integer, got string"},
        KeywordCase{"TypeList", R"({"type":["string","integer"]})", "3", ""},
        KeywordCase{"Enum", R"({"enum":["a","b"]})", R"("c")", R"(must be one of ["a","b"])"},
        KeywordCase{"Minimum", R"({"minimum":1})", "0", "must be at least 1"},
        KeywordCase{"Maximum", R"({"maximum":10})", "11", "must be at most 10"},
        KeywordCase{"MinLength", R"({"minLength":1})", R"("")", "at least 1 characters"},
        KeywordCase{"Pattern", R"({"pattern":"^v[0-9]+$"})", R"("1")", "must match"},
        KeywordCase{"Required", R"({"required":["a"]})", "{}", R"("a" is required)"},
        KeywordCase{"NestedPath", R"({"properties":{"a":{"properties":{"b":{"type":"string"}}}}})", R"({"a":{"b":1}})",
                    "a.b: must be of type string"},
        KeywordCase{"AdditionalPropertiesFalse", R"({"properties":{"port":{}},"additionalProperties":false})",
                    R"({"prot":1})", R"(unknown key "prot"; known: port)"},
        KeywordCase{"AdditionalPropertiesSchema", R"({"additionalProperties":{"type":"string"}})", R"({"k":1})",
                    "k: must be of type string"},
        KeywordCase{"Items", R"({"items":{"type":"string"}})", R"(["a",2])", "[1]: must be of type string"}),
    [](const ::testing::TestParamInfo<KeywordCase>& info) { return info.param.name; });

TEST(YamlToJson, TypesPlainScalarsAndKeepsQuotedOnesStrings) {
  const nlohmann::json j = YamlToJson(YAML::Load("{i: 8888, f: 0.5, b: true, n: ~, s: abc, q: '8888', e: ''}"));
  EXPECT_EQ(j, nlohmann::json::parse(R"({"i":8888,"f":0.5,"b":true,"n":null,"s":"abc","q":"8888","e":""})"));
}

// --- the chart's schema --------------------------------------------------------

TEST(ValuesSchema, IsDraft07AndUsesOnlyKeywordsTheTestsEnforce) {
  const nlohmann::json schema = ReadSchema();
  EXPECT_EQ(schema["$schema"], "http://json-schema.org/draft-07/schema#");
  EXPECT_THAT(UnsupportedKeywords(schema), IsEmpty());
}

TEST(ValuesSchema, AcceptsTheShippedValues) { EXPECT_THAT(ValidateJsonSchema(ReadSchema(), ShippedValues()), IsEmpty()); }

TEST(ValuesSchema, DescribesEveryShippedValue) {
  // Every value in values.yaml has a schema with a description, so a typo in a
  // key of the user's file is an unknown key, not a silently ignored one.
  const nlohmann::json schema = ReadSchema();
  std::vector<std::string> undescribed;
  std::function<void(const nlohmann::json&, const nlohmann::json&, const std::string&)> walk =
      [&](const nlohmann::json& s, const nlohmann::json& v, const std::string& path) {
        if (!v.is_object() || !s.contains("properties")) return;
        for (const auto& [key, child] : v.items()) {
          const std::string p = path.empty() ? key : path + "." + key;
          if (!s["properties"].contains(key)) {
            undescribed.push_back(p);
            continue;
          }
          const nlohmann::json& cs = s["properties"][key];
          if (!cs.contains("description") && !cs.contains("properties")) undescribed.push_back(p);
          walk(cs, child, p);
        }
      };
  walk(schema, ShippedValues(), "");
  EXPECT_THAT(undescribed, IsEmpty());
}

struct BrokenValues {
  const char* name;
  const char* overrides;  // YAML merged into values.yaml
  const char* error;      // what the message must say
};

class ValuesSchemaRejects : public ::testing::TestWithParam<BrokenValues> {};

TEST_P(ValuesSchemaRejects, Case) {
  const BrokenValues& c = GetParam();
  const YAML::Node values = MergeValues(YAML::LoadFile(kChartDir + "/values.yaml"), YAML::Load(c.overrides));
  EXPECT_THAT(ValidateJsonSchema(ReadSchema(), YamlToJson(values)), ElementsAre(HasSubstr(c.error)));
}

INSTANTIATE_TEST_SUITE_P(
    ValuesSchema, ValuesSchemaRejects,
    ::testing::Values(
        BrokenValues{"ReplicasAsText", "{replicaCount: two}", "replicaCount: must be of type integer"},
        BrokenValues{"NoReplicas", "{replicaCount: 0}", "replicaCount: must be at least 1"},
        BrokenValues{"SchedulerNameNotADnsName", "{schedulerName: Tessera_Scheduler}", "schedulerName: must match"},
        BrokenValues{"PortOutOfRange", "{tessera: {port: 70000}}", "tessera.port: must be at most 65535"},
        BrokenValues{"PortAsText", "{tessera: {port: '8888'}}", "tessera.port: must be of type integer"},
        BrokenValues{"MistypedKey", "{tessera: {prot: 9000}}", "tessera: unknown key \"prot\""},
        BrokenValues{"UnknownTopLevelKey", "{replicas: 3}", "(root): unknown key \"replicas\""},
        BrokenValues{"ZeroWeight", "{extender: {weight: 0}}", "extender.weight: must be at least 1"},
        BrokenValues{"TimeoutWithoutUnit", "{extender: {httpTimeout: '5'}}", "extender.httpTimeout: must match"},
        BrokenValues{"TimeoutInWords", "{extender: {httpTimeout: 5 seconds}}", "extender.httpTimeout: must match"},
        BrokenValues{"KubeSchedulerTooOld", "{kubeScheduler: {image: {tag: v1.24.9}}}", "kubeScheduler.image.tag: must match"},
        BrokenValues{"KubeSchedulerTagWithoutV", "{kubeScheduler: {image: {tag: 1.30.4}}}",
                     "kubeScheduler.image.tag: must match"},
        BrokenValues{"PullPolicyMisspelt", "{tessera: {image: {pullPolicy: ifNotPresent}}}",
                     "tessera.image.pullPolicy: must be one of"},
        BrokenValues{"ListenAddressNotAnIp", "{tessera: {listenAddress: localhost}}", "tessera.listenAddress: must match"},
        BrokenValues{"EmptyPolicy", "{tessera: {policy: ''}}", "tessera.policy: must be at least 1 characters"},
        BrokenValues{"ManagedResourceWithoutName", "{extender: {managedResources: [{ignoredByScheduler: true}]}}",
                     "extender.managedResources[0]: \"name\" is required"},
        BrokenValues{"ExtraArgNotAFlag", "{tessera: {extraArgs: [verbose]}}", "tessera.extraArgs[0]: must match"},
        BrokenValues{"MemoryLimitNotAQuantity", "{tessera: {resources: {limits: {memory: 2 GB}}}}",
                     "tessera.resources.limits.memory: must match"},
        BrokenValues{"ServiceTypeUnknown", "{metrics: {service: {type: Ingress}}}", "metrics.service.type: must be one of"},
        BrokenValues{"LabelValueNotText", "{commonLabels: {team: {name: gpu}}}", "commonLabels.team: must be of type string"}),
    [](const ::testing::TestParamInfo<BrokenValues>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::deploy
