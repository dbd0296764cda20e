#include "scheduler/framework/registry.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

absl::StatusOr<std::unique_ptr<Plugin>> NoPlugin(PluginArgs&) { return absl::InternalError("not built in this test"); }

TEST(PluginRegistryTest, AListWithUniqueNamesRegistersEveryNameSorted) {
  absl::StatusOr<PluginRegistry> registry = PluginRegistry::FromList({{"b", &NoPlugin, "B."}, {"a", &NoPlugin, "A."}});
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_EQ(registry->Names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(registry->Find("a"), nullptr);
  EXPECT_EQ(registry->Find("c"), nullptr);
  EXPECT_EQ(registry->Summary("a"), "A.");
  EXPECT_EQ(registry->Summary("c"), "");
}

TEST(PluginRegistryTest, ANameListedTwiceIsRefusedAndNamed) {
  absl::StatusOr<PluginRegistry> registry =
      PluginRegistry::FromList({{"gpu-share", &NoPlugin, ""}, {"fgd", &NoPlugin, ""}, {"gpu-share", &NoPlugin, ""}});
  ASSERT_FALSE(registry.ok());
  EXPECT_EQ(registry.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(registry.status().message().find("\"gpu-share\" is registered twice"), std::string::npos)
      << registry.status();
}

TEST(PluginRegistryTest, RegisteringATakenNameLaterKeepsTheFirstFactory) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.Register("x", &NoPlugin).ok());
  const PluginFactory* first = registry.Find("x");
  EXPECT_EQ(registry.Register("x", &NoPlugin).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Find("x"), first);
}

}  // namespace
}  // namespace tessera
