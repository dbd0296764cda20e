// The policy file's shortlist: section (how many of the best-ranked nodes
// filter passes on), and that it stays with the policy when a learned mix
// replaces the default profile.
#include <string>

#include "config/policy_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/model/target_workload.h"
#include "test/testing/policy_document.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kGpuShare =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: gpu-share\n";

absl::StatusOr<LoadedPolicy> Load(std::string_view text) { return testing::LoadWithBuiltins(text, "p.yaml"); }

TEST(ShortlistSectionTest, PassesTheOneBestNodeWhenAbsent) {
  absl::StatusOr<LoadedPolicy> p = Load(kGpuShare);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->profiles->shortlist().max_nodes, 1);
}

TEST(ShortlistSectionTest, ReadsMaxNodesAndZeroTurnsItOff) {
  for (const int64_t max_nodes : {0, 1, 100}) {
    absl::StatusOr<LoadedPolicy> p =
        Load(std::string(kGpuShare) + "shortlist:\n  maxNodes: " + std::to_string(max_nodes) + "\n");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->profiles->shortlist().max_nodes, max_nodes);
  }
}

TEST(ShortlistSectionTest, RefusesBadFieldsWithLineAndField) {
  struct Case {
    const char* name;
    const char* section;
    const char* error;
  };
  const Case cases[] = {
      {"more nodes than it caps", "shortlist:\n  maxNodes: 101\n",
       "p.yaml:6:13: shortlist.maxNodes: must be an integer in 0..100; got \"101\""},
      {"a negative count", "shortlist:\n  maxNodes: -1\n", "shortlist.maxNodes: must be an integer in 0..100"},
      {"a count that is no integer", "shortlist:\n  maxNodes: few\n", "shortlist.maxNodes: must be an integer"},
      {"a misspelt field", "shortlist:\n  maxnodes: 2\n", "shortlist.maxnodes: unknown field"},
      {"a section that is no map", "shortlist: 4\n", "p.yaml:5:12: shortlist: must be a map"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LoadedPolicy> p = Load(std::string(kGpuShare) + c.section);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.error)) << c.name;
  }
}

TEST(ShortlistSectionTest, StaysWithThePolicyWhenALearnedMixReplacesTheDefaultProfile) {
  absl::StatusOr<LoadedPolicy> p = Load(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nshortlist: {maxNodes: 2}\nplugins:\n"
      "  - name: fgd\n    args: {workload: [\"1 cpu=1 gpu=1\"]}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<TargetWorkload> learned = TargetWorkload::Create({*ParseWorkloadPod("1 cpu=1 gpu=250m")});
  ASSERT_TRUE(learned.ok()) << learned.status();
  const std::shared_ptr<const Profile> relearned =
      p->profile->WithWorkload(std::make_shared<const TargetWorkload>(*std::move(learned)));
  ASSERT_NE(relearned, nullptr);
  EXPECT_EQ(p->profiles->WithDefault(relearned)->shortlist().max_nodes, 2);
}

}  // namespace
}  // namespace tessera
