#include "policies/builtin_registry.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(BuiltinRegistryTest, EveryShippedPluginIsRegisteredOnceUnderItsPolicyFileName) {
  const std::vector<std::string> expected = {"best-fit",    "dot-product", "fgd",          "gpu-clustering",
                                             "gpu-fit",     "gpu-packing", "gpu-share",    "host-resources",
                                             "host-stranding", "load-aware", "mig-partition", "nvlink-topology", "random"};
  EXPECT_EQ(NewBuiltinRegistry().Names(), expected);
  EXPECT_EQ(BuiltinPlugins().size(), expected.size()) << "a built-in name is listed twice";
}

}  // namespace
}  // namespace tessera
