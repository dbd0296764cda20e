#include "config/policy_reference.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/policy_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "scheduler/framework/plugin_args.h"
#include "test/testing/policy_document.h"

namespace tessera {
namespace {

TEST(PolicyReferenceTest, EveryBuiltinPluginHasASummaryAndEveryArgItReadsHasADoc) {
  const PluginRegistry registry = NewBuiltinRegistry();
  for (const std::string& name : registry.Names()) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(registry.Summary(name).empty());
    absl::StatusOr<PluginArgs> args = PluginArgs::FromText("");
    ASSERT_TRUE(args.ok());
    (void)(*registry.Find(name))(*args);
    for (const ArgDescription& arg : args->described()) {
      EXPECT_FALSE(arg.doc.empty()) << arg.key << " has no doc";
      EXPECT_FALSE(arg.type.empty()) << arg.key;
    }
  }
}

TEST(PolicyReferenceTest, ThePageListsEachPluginWithItsArgsDefaultsAndRanges) {
  const std::string page = PolicyFileReferenceMarkdown(NewBuiltinRegistry());
  for (const std::string& name : NewBuiltinRegistry().Names()) {
    EXPECT_NE(page.find("\n## " + name + "\n"), std::string::npos) << name;
  }
  // gpu-share's burst cap, and fgd repeating gpu-share's args as it reads them.
  EXPECT_NE(page.find("| `maxLimitPercent` | integer | 100..1000 | `200` |"), std::string::npos) << page;
  const size_t fgd = page.find("\n## fgd\n");
  ASSERT_NE(fgd, std::string::npos);
  EXPECT_NE(page.find("| `workload` | list of strings |", fgd), std::string::npos);
  EXPECT_NE(page.find("| `maxLimitPercent` |", fgd), std::string::npos);
  // A plugin that takes no args says so.
  const size_t best_fit = page.find("\n## best-fit\n");
  ASSERT_NE(best_fit, std::string::npos);
  EXPECT_NE(page.find("Takes no args.", best_fit), std::string::npos);
}

// The sections the loader reads beside apiVersion, kind and plugins.
std::set<std::string> Sections() { return {"pools", "tenants", "telemetry", "workloadLearning", "shortlist"}; }

TEST(PolicyReferenceTest, EverySectionAndEveryFieldItsReaderReadsHasADoc) {
  std::set<std::string> described;
  for (const PolicySectionDescription& section : DescribePolicySections()) {
    SCOPED_TRACE(section.key);
    described.insert(section.key);
    EXPECT_FALSE(section.doc.empty()) << section.key << " has no doc";
    EXPECT_FALSE(section.fields.empty()) << section.key << " declares no field";
    for (const ArgDescription& field : section.fields) {
      EXPECT_FALSE(field.doc.empty()) << section.key << "." << field.key << " has no doc";
      EXPECT_FALSE(field.type.empty()) << section.key << "." << field.key;
    }
  }
  EXPECT_EQ(described, Sections());
}

TEST(PolicyReferenceTest, NestedMapsAndListItemsAreDescribedByTheirFields) {
  std::map<std::string, std::vector<std::string>> keys;  // section -> its fields' keys
  for (const PolicySectionDescription& section : DescribePolicySections()) {
    for (const ArgDescription& field : section.fields) keys[section.key].push_back(field.key);
  }
  // Absent from an empty document, the nested maps are read all the same.
  EXPECT_THAT(keys["telemetry"], ::testing::IsSupersetOf({"prometheus", "prometheus.url", "prometheus.labels.node",
                                                  "prometheus.queries.sampleTime", "prometheus.windows.utilization"}));
  EXPECT_THAT(keys["tenants"], ::testing::IsSupersetOf({"name", "guaranteed.gpuMilli", "max.gpuMemory", "expiredPriority"}));
  EXPECT_THAT(keys["pools"], ::testing::ElementsAre("name", "taskTypes", "exclusive", "plugins"));
}

// What is described is what is read: the loader takes each section's key (a
// typo'd one would be refused as an unknown field).
TEST(PolicyReferenceTest, EachDescribedSectionIsOneTheLoaderTakes) {
  const std::string head = "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n";
  for (const PolicySectionDescription& section : DescribePolicySections()) {
    absl::StatusOr<LoadedPolicy> policy = testing::LoadWithBuiltins(head + section.key + ":\n");
    EXPECT_TRUE(policy.ok()) << section.key << ": " << policy.status();
  }
  EXPECT_FALSE(testing::LoadWithBuiltins(head + "shortlists:\n").ok());
}

TEST(PolicyReferenceTest, ThePageListsEachSectionWithItsFieldsAfterThePlugins) {
  const std::string page = PolicyFileReferenceMarkdown(NewBuiltinRegistry());
  const size_t sections = page.find("\n## Sections\n");
  ASSERT_NE(sections, std::string::npos) << page;
  EXPECT_GT(sections, page.find("\n## random\n"));
  for (const std::string& key : Sections()) {
    EXPECT_NE(page.find("\n## " + key + "\n", sections), std::string::npos) << key;
    EXPECT_NE(page.find("| [`" + key + "`](#", sections), std::string::npos) << key;
  }
  EXPECT_NE(page.find("| `maxNodes` | integer | 0..100 | `1` |", sections), std::string::npos);
  EXPECT_NE(page.find("| `refreshInterval` | duration | 1s..1h | `15s` |", sections), std::string::npos);
  // A required field, and one whose absence means no limit, show no default.
  EXPECT_NE(page.find("| `prometheus.url` | string | non-empty |  | Required", sections), std::string::npos);
  EXPECT_NE(page.find("| `max.gpus` | integer | 0..1099511627776 |  |", sections), std::string::npos);
  EXPECT_NE(page.find("| `maxRunTime` | duration | 1m..8784h |  |", sections), std::string::npos);
  // A list's items, and a field the section reads itself.
  EXPECT_NE(page.find("A list; each item is a map of these fields:", page.find("\n## tenants\n")), std::string::npos);
  EXPECT_NE(page.find("| `plugins` | list of plugins |", page.find("\n## pools\n")), std::string::npos);
}

}  // namespace
}  // namespace tessera
