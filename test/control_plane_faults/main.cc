// The fault tests' main: a plane of their own, since a killed and restarted
// API server leaves kube-scheduler slow to recover for a while (on v1.36,
// ~40 s) and later tests on the same plane would inherit it.
#include <gtest/gtest.h>

#include "test/testing/control_plane.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::testing::ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  ::testing::AddGlobalTestEnvironment(new tessera::testing::ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
