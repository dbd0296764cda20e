// The policy file's workloadLearning: section, and the store putting a
// learned workload in force over the file's own lists.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/policy_loader.h"
#include "config/policy_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"
#include "test/testing/builders.h"
#include "test/testing/policy_document.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kFgd =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: fgd\n"
    "    args:\n"
    "      workload: [\"1 cpu=1 gpu=1\"]\n";

absl::StatusOr<LoadedPolicy> Load(std::string_view text) { return testing::LoadWithBuiltins(text, "p.yaml"); }

TEST(WorkloadLearningSectionTest, IsOnWithItsDefaultsWhenAbsent) {
  absl::StatusOr<LoadedPolicy> p = Load(kFgd);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->learning, WorkloadLearning{});
  EXPECT_TRUE(p->learning.enabled);
}

TEST(WorkloadLearningSectionTest, ReadsEveryField) {
  absl::StatusOr<LoadedPolicy> p = Load(std::string(kFgd) +
                                        "workloadLearning:\n"
                                        "  enabled: false\n"
                                        "  windowPods: 800\n"
                                        "  warmupPods: 80\n"
                                        "  publishEveryPods: 20\n"
                                        "  coveragePercent: 90\n"
                                        "  maxKinds: 12\n"
                                        "  priorPercent: 0\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->learning, (WorkloadLearning{.enabled = false, .window_pods = 800, .warmup_pods = 80,
                                           .publish_every_pods = 20, .coverage_percent = 90, .max_kinds = 12,
                                           .prior_percent = 0}));
}

TEST(WorkloadLearningSectionTest, RefusesBadFieldsWithLineAndField) {
  struct Case {
    const char* name;
    const char* section;
    const char* error;
  };
  const Case cases[] = {
      {"a window too small to learn from", "  windowPods: 10\n", "p.yaml:8:15: workloadLearning.windowPods: must be an integer in 100..1000000; got \"10\""},
      {"a warm-up longer than the window", "  windowPods: 100\n  warmupPods: 200\n", "p.yaml:9:15: workloadLearning.warmupPods: must be at most windowPods (100)"},
      {"coverage above 100%", "  coveragePercent: 101\n", "workloadLearning.coveragePercent: must be an integer in 1..100"},
      {"a prior share above 100%", "  priorPercent: 150\n", "workloadLearning.priorPercent: must be an integer in 0..100"},
      {"enabled that is not a boolean", "  enabled: sometimes\n", "workloadLearning.enabled: must be true or false"},
      {"an unknown field", "  halfLife: 3h\n", "workloadLearning.halfLife: unknown field"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LoadedPolicy> p = Load(std::string(kFgd) + "workloadLearning:\n" + c.section);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.error)) << c.name;
  }
}

class LearnedWorkloadStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "tessera-learned-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = (dir_ / "policy.yaml").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(std::string_view text) { std::ofstream(path_, std::ios::trunc) << text; }
  std::unique_ptr<PolicyStore> Open() {
    absl::StatusOr<std::unique_ptr<PolicyStore>> store = PolicyStore::Open(path_, registry_, nullptr);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  std::filesystem::path dir_;
  std::string path_;
  const PluginRegistry registry_ = NewBuiltinRegistry();
};

std::shared_ptr<const TargetWorkload> Mix(const char* item) {
  return std::make_shared<const TargetWorkload>(*TargetWorkload::Create({*ParseWorkloadPod(item)}));
}

// fgd's score of a quarter-GPU pod on a node with one GPU three-quarters
// full and one empty: under a workload of quarter-GPU pods the node stays
// perfectly usable; under one of whole-GPU pods the quarter breaks a GPU.
int64_t Score(const Profile& profile) {
  const testing::Node built = testing::Node("n").Gpus(2).Hold(0, 750);
  const NodeView node = built.View();
  const CycleState cycle(testing::Pod().Fraction(250));
  const std::vector<const NodeView*> nodes = {&node};
  const RunResult run = profile.Run(cycle, nodes, RunOptions{}, nullptr);
  EXPECT_EQ(run.totals.size(), 1u) << "the pod fits";
  return run.totals.empty() ? -1 : run.totals[0];
}

TEST_F(LearnedWorkloadStoreTest, ALearnedMixReplacesTheFilesListAndSurvivesAReload) {
  Write(kFgd);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> file = store->Current();
  EXPECT_EQ(store->LearnedWorkload(), nullptr);

  const std::shared_ptr<const TargetWorkload> quarters = Mix("1 cpu=1 gpu=250m");
  store->PublishLearnedWorkload(quarters);
  EXPECT_NE(store->Current(), file);  // a new profile: a new memo key
  EXPECT_EQ(store->LearnedWorkload(), quarters);
  EXPECT_NE(Score(*store->Current()), Score(*file));

  // A reload keeps the learned mix over the new file's lists.
  Write(std::string(kFgd) + "workloadLearning: {windowPods: 1000}\n");
  ASSERT_TRUE(store->Reload().ok());
  EXPECT_EQ(store->LearnedWorkload(), quarters);

  // Going back to the file's lists.
  store->PublishLearnedWorkload(nullptr);
  EXPECT_EQ(store->LearnedWorkload(), nullptr);
  EXPECT_EQ(Score(*store->Current()), Score(*file));
}

TEST_F(LearnedWorkloadStoreTest, AMixToldTheClusterAnewIsPutInForceOnlyWhereItChangesAVerdict) {
  // host-stranding's list has an 8-GPU kind: with one idle node of 8 it is
  // short of idle nodes (reserved), with 100 not.
  Write(std::string(kFgd) +
        "  - name: host-stranding\n"
        "    args:\n"
        "      workload: [\"3 cpu=1 gpu=1\", \"1 cpu=8 gpu=8\"]\n");
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const auto told = [](int64_t idle_nodes) {
    return std::make_shared<const TargetWorkload>(
        Mix("3 cpu=1 gpu=1")
            ->WithCluster({.cpu_per_gpu = {}, .gpu_models = {}, .idle_nodes = {{8, 96000, "G2", idle_nodes}},
                           .free_milli = 80000})
            .WithPriorPercent(50));
  };
  EXPECT_FALSE(store->RetellLearnedWorkload(told(1))) << "nothing learned yet: the file's lists are in force";

  store->PublishLearnedWorkload(told(100));
  const std::shared_ptr<const Profile> learned = store->Current();
  EXPECT_FALSE(store->RetellLearnedWorkload(told(90)));
  EXPECT_EQ(store->Current(), learned) << "the same verdicts: the profile and its memo stay";

  const std::shared_ptr<const TargetWorkload> short_of_idle = told(1);
  EXPECT_TRUE(store->RetellLearnedWorkload(short_of_idle));
  EXPECT_NE(store->Current(), learned);
  EXPECT_EQ(store->LearnedWorkload(), short_of_idle);
  EXPECT_NE(store->Current()->ClusterVerdicts(), learned->ClusterVerdicts());
}

TEST_F(LearnedWorkloadStoreTest, AFileThatTurnsLearningOffDropsTheLearnedMixAndRefusesNewOnes) {
  Write(kFgd);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  store->PublishLearnedWorkload(Mix("1 cpu=1 gpu=250m"));
  Write(std::string(kFgd) + "workloadLearning: {enabled: false}\n");
  ASSERT_TRUE(store->Reload().ok());
  EXPECT_EQ(store->LearnedWorkload(), nullptr);
  EXPECT_FALSE(store->CurrentLearning().enabled);
  store->PublishLearnedWorkload(Mix("1 cpu=1 gpu=250m"));
  EXPECT_EQ(store->LearnedWorkload(), nullptr);
}

TEST_F(LearnedWorkloadStoreTest, APolicyWithoutWorkloadPluginsKeepsItsProfile) {
  Write("apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n");
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> file = store->Current();
  store->PublishLearnedWorkload(Mix("1 cpu=1 gpu=250m"));
  EXPECT_EQ(store->Current(), file);
  EXPECT_EQ(store->LearnedWorkload(), nullptr);
}

}  // namespace
}  // namespace tessera
