// The policy file's `pools:` section: node pools by task type, each with its
// own plugins, and errors with file:line:col like the rest of the file.
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kHead = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
)";

absl::StatusOr<LoadedPolicy> Load(const std::string& pools) { return testing::LoadWithBuiltins(kHead + pools); }

TEST(PoolsSection, AbsentMeansOneProfileForEveryPod) {
  absl::StatusOr<LoadedPolicy> p = Load("");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_NE(p->profiles, nullptr);
  EXPECT_TRUE(p->profiles->pools().empty());
  EXPECT_EQ(p->profiles->default_profile(), p->profile) << "the set's default is the profile Current() gives";
  EXPECT_EQ(p->profiles->PoolFor("training"), nullptr);
}

TEST(PoolsSection, ReadsEveryFieldAndBuildsEachPoolsOwnProfile) {
  absl::StatusOr<LoadedPolicy> p = Load(R"(pools:
  - name: gpu-training
    taskTypes: [training, fine-tuning]
    exclusive: true
    plugins:
      - name: host-resources
      - name: gpu-share
        weight: 3
        args: {nodeStrategy: binpack}
  - name: gpu-inference
    taskTypes: [inference]
    plugins:
      - name: gpu-share
        args: {nodeStrategy: spread}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::vector<PoolPolicy>& pools = p->profiles->pools();
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].name, "gpu-training");
  EXPECT_THAT(pools[0].task_types, ElementsAre("training", "fine-tuning"));
  EXPECT_TRUE(pools[0].exclusive);
  EXPECT_THAT(pools[0].profile->PluginNames(), ElementsAre("host-resources", "gpu-share"));
  EXPECT_EQ(pools[1].name, "gpu-inference");
  EXPECT_FALSE(pools[1].exclusive) << "a pool shares its nodes unless it says otherwise";
  EXPECT_THAT(pools[1].profile->PluginNames(), ElementsAre("gpu-share"));
  EXPECT_NE(pools[1].profile, p->profile) << "each pool has a profile of its own";
  EXPECT_EQ(p->profiles->PoolFor("fine-tuning"), &pools[0]);
  EXPECT_EQ(p->profiles->PoolFor("inference"), &pools[1]);
  EXPECT_EQ(p->profiles->PoolFor("batch"), nullptr);
  EXPECT_TRUE(p->profiles->has_exclusive_pools());
}

TEST(PoolsSection, APoolMayListAPluginTheTopLevelListsToo) {
  // Duplicates are checked per list: each pool is a profile of its own.
  absl::StatusOr<LoadedPolicy> p = Load(R"(pools:
  - name: a
    taskTypes: [x]
    plugins: [{name: gpu-share}]
)");
  ASSERT_TRUE(p.ok()) << p.status();
}

TEST(PoolsSection, ThePoolsErrorsAreReportedEvenWhenTheTopLevelPluginsAreMissing) {
  absl::StatusOr<LoadedPolicy> p = testing::LoadWithBuiltins(R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
pools:
  - name: a
    taskTypes: [x]
    plugins: [{name: gpu-shar}]
)");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("policy.yaml:1:1: plugins: required"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("policy.yaml:6:22: pools[0].plugins[0].name: unknown plugin \"gpu-shar\""));
}

struct BadPoolsCase {
  std::string name;
  std::string yaml;
  std::string error;
};

class PoolsSectionErrors : public ::testing::TestWithParam<BadPoolsCase> {};

TEST_P(PoolsSectionErrors, AreRefusedWithFileLineAndField) {
  absl::StatusOr<LoadedPolicy> p = Load(GetParam().yaml);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr(GetParam().error));
  EXPECT_THAT(std::string(p.status().message()), Not(HasSubstr("Internal"))) << "every error is the loader's, with its position";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PoolsSectionErrors,
    ::testing::Values(
        BadPoolsCase{"NotAList", "pools: {a: 1}\n", "policy.yaml:5:8: pools: must be a list of pools"},
        BadPoolsCase{"APoolWithoutAName", "pools:\n  - taskTypes: [x]\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:6:5: pools[0].name: required"},
        BadPoolsCase{"APoolNameThatIsNoLabelValue",
                     "pools:\n  - name: gpu pool\n    taskTypes: [x]\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:6:11: pools[0].name: must be a label value, as node pool labels are; \"gpu pool\" "
                     "may hold only letters, digits"},
        BadPoolsCase{"APoolListedTwice",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    plugins: [{name: gpu-share}]\n"
                     "  - name: a\n    taskTypes: [y]\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:9:11: pools[1].name: duplicate pool \"a\" (first listed as pools[0])"},
        BadPoolsCase{"ATaskTypeRoutedToTwoPools",
                     "pools:\n  - name: a\n    taskTypes: [training]\n    plugins: [{name: gpu-share}]\n"
                     "  - name: b\n    taskTypes: [inference, training]\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:10:28: pools[1].taskTypes[1]: task type \"training\" is already routed to pool "
                     "\"a\" (pools[0].taskTypes[0]); a task type goes to one pool"},
        BadPoolsCase{"APoolWithoutTaskTypes", "pools:\n  - name: a\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:6:5: pools[0].taskTypes: required"},
        BadPoolsCase{"APoolWithAnEmptyTaskTypeList", "pools:\n  - name: a\n    taskTypes: []\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:7:16: pools[0].taskTypes: must list at least one task type"},
        BadPoolsCase{"ATaskTypeThatIsNoLabelValue",
                     "pools:\n  - name: a\n    taskTypes: [-training]\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:7:17: pools[0].taskTypes[0]: must be a label value (of tessera.io/task-type); "
                     "\"-training\" must begin and end with a letter or digit"},
        BadPoolsCase{"APoolWithoutPlugins", "pools:\n  - name: a\n    taskTypes: [x]\n",
                     "policy.yaml:6:5: pools[0].plugins: required; list at least one plugin"},
        BadPoolsCase{"AnUnknownPluginInAPool",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    plugins:\n      - name: gpu-shar\n",
                     "policy.yaml:9:15: pools[0].plugins[0].name: unknown plugin \"gpu-shar\"; known: "},
        BadPoolsCase{"APluginTwiceInOnePool",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    plugins:\n      - name: gpu-share\n"
                     "      - name: gpu-share\n",
                     "policy.yaml:10:15: pools[0].plugins[1].name: duplicate plugin \"gpu-share\" (first listed as "
                     "pools[0].plugins[0])"},
        BadPoolsCase{"APoolsArgsValidatedByThePlugin",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    plugins:\n      - name: gpu-share\n"
                     "        args: {nodeStrategy: pack}\n",
                     "policy.yaml:10:30: pools[0].plugins[0].args.nodeStrategy: must be one of binpack, spread"},
        BadPoolsCase{"APoolWithoutAGpuChooser",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    plugins:\n      - name: host-resources\n",
                     "policy.yaml:9:7: pools[0].plugins: a profile needs exactly one plugin that chooses GPUs"},
        BadPoolsCase{"AnExclusiveThatIsNoBool",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    exclusive: yes please\n    plugins: [{name: gpu-share}]\n",
                     "policy.yaml:8:16: pools[0].exclusive: must be true or false"},
        BadPoolsCase{"AnUnknownField",
                     "pools:\n  - name: a\n    taskTypes: [x]\n    selector: {a: b}\n    plugins: [{name: gpu-share}]\n",
                     "pools[0].selector"}),
    [](const ::testing::TestParamInfo<BadPoolsCase>& info) { return info.param.name; });

TEST(PoolsSection, ALearnedWorkloadReplacesTheDefaultProfileInTheSetAndLeavesThePoolsAsTheFileSaysThem) {
  std::string dir = (std::filesystem::temp_directory_path() / "tessera-pools-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/policy.yaml";
  std::ofstream(path) << R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: fgd
    args: {workload: ["1 cpu=1 gpu=1"]}
pools:
  - name: gpu-inference
    taskTypes: [inference]
    plugins:
      - name: fgd
        args: {workload: ["1 cpu=1 gpu=250m"]}
)";
  static const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::unique_ptr<PolicyStore>> store = PolicyStore::Open(path, registry, nullptr);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::shared_ptr<const ProfileSet> file = (*store)->CurrentProfiles();
  EXPECT_EQ(file->default_profile(), (*store)->Current());

  (*store)->PublishLearnedWorkload(
      std::make_shared<const TargetWorkload>(*TargetWorkload::Create({*ParseWorkloadPod("1 cpu=1 gpu=500m")})));
  const std::shared_ptr<const ProfileSet> learned = (*store)->CurrentProfiles();
  EXPECT_NE(learned, file);
  EXPECT_EQ(learned->default_profile(), (*store)->Current()) << "one set: the request reads the learned default";
  EXPECT_NE(learned->default_profile(), file->default_profile());
  ASSERT_EQ(learned->pools().size(), 1u);
  EXPECT_EQ(learned->pools()[0].profile, file->pools()[0].profile) << "a pool keeps its own list (and its memo)";

  (*store)->PublishLearnedWorkload(nullptr);
  EXPECT_EQ((*store)->CurrentProfiles(), file);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
