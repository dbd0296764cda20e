// The shipped example policies load with the built-in plugins.
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
  };
  for (const auto& [name, plugins] : examples) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::shared_ptr<const Profile>> profile =
        LoadPolicyFile(std::string(TESSERA_SOURCE_DIR) + "/config/examples/" + name, registry);
    ASSERT_TRUE(profile.ok()) << profile.status();
    EXPECT_EQ((*profile)->PluginNames(), plugins);
  }
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
