// The tenant and preemption tests' main: a plane of their own, whose Tessera
// runs a policy with tenants (tenants-policy.yaml).
#include <gtest/gtest.h>

#include "test/testing/control_plane.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::testing::ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/test/control_plane_tenants/tenants-policy.yaml";
  ::testing::AddGlobalTestEnvironment(new tessera::testing::ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
