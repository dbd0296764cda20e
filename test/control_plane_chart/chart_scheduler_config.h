// The Helm chart's kube-scheduler configuration, rendered by the real helm,
// as a template the control plane's up.sh fills in (test/testing/control_plane.h,
// Options::scheduler_config_template): the control-plane tests of this folder
// run kube-scheduler on exactly what the chart deploys, so a verb the chart
// drops, or a field a kube-scheduler version refuses, fails them.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tessera::testing {

/// Renders the chart's scheduler ConfigMap with helm (default values) and
/// replaces only what a cluster decides, not the chart: the kubeconfig
/// (@KUBECONFIG@), leader election (off: one scheduler, and the plane's
/// scheduler user may update only the lease named kube-scheduler) and the
/// extender's host and port (@EXT_PORT@@EXT_URL_PATH@, where the plane's
/// Tessera listens). The extender's verbs, weight, httpTimeout,
/// nodeCacheCapable and ignorable, the profiles and percentageOfNodesToScore
/// stay as rendered. FailedPrecondition without helm.
absl::StatusOr<std::string> ChartSchedulerConfigTemplate();

}  // namespace tessera::testing
