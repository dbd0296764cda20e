// The failover tests' main: one plane whose kube-schedulers elect a leader,
// with short lease timings so that a failover takes seconds, not a minute.
#include <gtest/gtest.h>

#include "test/testing/control_plane.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::testing::ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  options.leader_elect = true;
  options.lease_duration = "6s";
  options.renew_deadline = "4s";
  options.retry_period = "1s";
  // Tessera's own writer election, with the same timings.
  options.extender_flags = {"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s",
                            "--leader-elect-retry-period=1s"};
  ::testing::AddGlobalTestEnvironment(new tessera::testing::ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
