// The chart tests' main: a plane of their own, whose kube-scheduler runs on
// the Helm chart's rendered configuration (chart_scheduler_config.h) rather
// than the plane's own template, calling a Tessera with the policy the image
// ships. Without helm the plane starts on its own template, and the tests
// skip (fail with CI=true) saying so.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <gtest/gtest.h>

#include "test/control_plane_chart/chart_scheduler_config.h"
#include "test/control_plane_chart/chart_test_state.h"
#include "test/testing/control_plane.h"

namespace tessera::testing {

ChartTestState& TheChartTestState() {
  static ChartTestState state;
  return state;
}

}  // namespace tessera::testing

int main(int argc, char** argv) {
  using namespace tessera::testing;
  ::testing::InitGoogleTest(&argc, argv);
  ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  // The chart's Tessera serves the protocol at the root (no --url-prefix).
  options.url_path = "";

  ChartTestState& state = TheChartTestState();
  absl::StatusOr<std::string> config = ChartSchedulerConfigTemplate();
  if (config.ok()) {
    state.template_path = (std::filesystem::temp_directory_path() /
                           ("tessera-chart-scheduler-config-" + std::to_string(::getpid()) + ".yaml.tmpl"))
                              .string();
    std::ofstream(state.template_path) << *config;
    state.rendered = *config;
    options.scheduler_config_template = state.template_path;
  } else {
    state.missing = std::string(config.status().message());
    std::cout << "the chart's scheduler configuration could not be rendered: " << state.missing << std::endl;
  }
  ::testing::AddGlobalTestEnvironment(new ControlPlaneEnvironment(options));
  const int code = RUN_ALL_TESTS();
  if (!state.template_path.empty()) std::filesystem::remove(state.template_path);
  return code;
}
