// What this binary's main found of the chart, for its tests.
#pragma once

#include <string>

#include "test/testing/control_plane.h"

namespace tessera::testing {

struct ChartTestState {
  std::string rendered;       ///< The template kube-scheduler was started on; empty without helm.
  std::string template_path;  ///< Where it was written.
  std::string missing;        ///< Why it could not be rendered (no helm, or helm failed).
};
ChartTestState& TheChartTestState();

/// In a test's SetUp: skips without the chart's configuration (fails under CI=true).
#define TESSERA_REQUIRE_CHART_CONFIG()                                                   \
  do {                                                                                   \
    const ::tessera::testing::ChartTestState& chart = ::tessera::testing::TheChartTestState(); \
    if (chart.rendered.empty()) {                                                        \
      if (::tessera::testing::RunningInCi()) GTEST_FAIL() << chart.missing;              \
      GTEST_SKIP() << chart.missing;                                                     \
    }                                                                                    \
  } while (false)

}  // namespace tessera::testing
