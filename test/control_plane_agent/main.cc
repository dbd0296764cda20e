// The node agent's control-plane tests' main: one plane whose Tessera runs
// the policy for NVLink machines (config/examples/topology-policy.yaml), so
// that what the agent publishes decides where multi-GPU pods land.
#include <gtest/gtest.h>

#include "test/testing/control_plane.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::testing::ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/topology-policy.yaml";
  ::testing::AddGlobalTestEnvironment(new tessera::testing::ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
