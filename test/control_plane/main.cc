// The control-plane tests' main: one plane and one Tessera for the whole
// binary (ControlPlaneEnvironment), since starting them takes seconds.
#include <gtest/gtest.h>

#include "test/testing/control_plane.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::testing::ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  // The policy the image ships: what users run, not a test policy.
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  ::testing::AddGlobalTestEnvironment(new tessera::testing::ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
