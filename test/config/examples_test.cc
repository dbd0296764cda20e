// The shipped example policies load with the built-in plugins.
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "config/policy_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/builtin_registry.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;

TEST(ExamplePoliciesTest, EveryExampleLoadsWithTheBuiltinPlugins) {
  const PluginRegistry registry = NewBuiltinRegistry();
  const std::vector<std::pair<std::string, std::vector<std::string>>> examples = {
      {"default-policy.yaml", {"host-resources", "fgd", "mig-partition", "host-stranding"}},
      {"binpack-policy.yaml", {"gpu-share"}},
      {"spread-policy.yaml", {"gpu-share"}},
      {"topology-policy.yaml", {"gpu-share", "nvlink-topology"}},
  };
  for (const auto& [name, plugins] : examples) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::shared_ptr<const Profile>> profile =
        LoadPolicyFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/" + name, registry);
    ASSERT_TRUE(profile.ok()) << profile.status();
    EXPECT_EQ((*profile)->PluginNames(), plugins);
  }
}

TEST(ExamplePoliciesTest, ThePoolsExampleRoutesTrainingAndInferenceToPoolsOfTheirOwn) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::string> text = [] () -> absl::StatusOr<std::string> {
    std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/config/examples/pools-policy.yaml");
    if (!in) return absl::NotFoundError("config/examples/pools-policy.yaml");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(*text, "pools-policy.yaml", registry);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_THAT(policy->profile->PluginNames(), ElementsAre("host-resources", "gpu-share"));
  const ProfileSet& set = *policy->profiles;
  ASSERT_EQ(set.pools().size(), 2u);
  ASSERT_NE(set.PoolFor("training"), nullptr);
  EXPECT_EQ(set.PoolFor("training")->name, "gpu-training");
  EXPECT_EQ(set.PoolFor("fine-tuning"), set.PoolFor("training"));
  EXPECT_TRUE(set.PoolFor("training")->exclusive);
  EXPECT_THAT(set.PoolFor("training")->profile->PluginNames(),
              ElementsAre("host-resources", "gpu-share", "nvlink-topology"));
  ASSERT_NE(set.PoolFor("inference"), nullptr);
  EXPECT_EQ(set.PoolFor("inference")->name, "gpu-inference");
  EXPECT_FALSE(set.PoolFor("inference")->exclusive);
}

TEST(ExamplePoliciesTest, GpuShareArgsAreValidatedThroughTheLoader) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\n"
      "kind: SchedulingPolicy\n"
      "plugins:\n"
      "  - name: gpu-share\n"
      "    weight: 2\n"
      "    args:\n"
      "      nodeStrategy: pack\n"
      "      maxLimitPercent: 50\n",
      "policy.yaml", registry);
  EXPECT_EQ(profile.status().message(),
            "policy.yaml:7:21: plugins[0].args.nodeStrategy: must be one of binpack, spread; got \"pack\"\n"
            "policy.yaml:8:24: plugins[0].args.maxLimitPercent: must be an integer in 100..1000; got 50");
}

}  // namespace
}  // namespace tessera
