// Where live GPU metrics come from and how often: the `telemetry:` section of
// the policy file (config/policy_loader.h parses and validates it; this file
// is the plain value it produces, so the loader needs no telemetry code).
//
//   telemetry:
//     refreshInterval: 15s      # how often Prometheus is queried
//     staleAfter: 3m            # a measurement older than this is not trusted
//     nodeAnnotations: true     # also read tessera.io/gpu-utilization from Node objects
//     prometheus:               # optional: no Prometheus source when absent
//       url: http://prometheus.monitoring:9090
//       timeout: 5s
//       labels: {node: Hostname, uuid: UUID, gpu: gpu}
//       queries:                # PromQL; each answer must be an instant vector
//         utilization: avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m])            # percent
//         sustainedUtilization: avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m])   # percent; "" = not queried
//         smActive: ""          # ratio 0..1, e.g. avg_over_time(DCGM_FI_PROF_SM_ACTIVE[1m])
//         memoryUsed: DCGM_FI_DEV_FB_USED                                  # MiB
//         memoryFree: DCGM_FI_DEV_FB_FREE                                  # MiB
//         sampleTime: timestamp(DCGM_FI_DEV_GPU_UTIL)                      # Unix seconds
//       windows: {utilization: 1m avg, sustainedUtilization: 5m avg}      # names in messages
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"

namespace tessera {

/// The PromQL Tessera runs. Units are fixed by meaning, as the DCGM exporter
/// reports them; an empty query is not run (utilization is required).
struct PrometheusQueries {
  std::string utilization = "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m])";
  std::string sustained_utilization = "avg_over_time(DCGM_FI_DEV_GPU_UTIL[5m])";
  std::string sm_active;
  std::string memory_used = "DCGM_FI_DEV_FB_USED";
  std::string memory_free = "DCGM_FI_DEV_FB_FREE";
  /// When each GPU was last scraped. A GPU absent from this answer (its series
  /// went stale: the exporter stopped) is not refreshed. Empty: a GPU counts
  /// as sampled when Prometheus evaluated the utilization query.
  std::string sample_time = "timestamp(DCGM_FI_DEV_GPU_UTIL)";

  bool operator==(const PrometheusQueries&) const = default;
};

struct PrometheusSettings {
  /// http://host[:port][/path-prefix]; plain HTTP (run a sidecar for TLS).
  std::string url;
  /// Limit on each query, connection included.
  absl::Duration timeout = absl::Seconds(5);
  /// Labels naming a series' node (matched to the Kubernetes node name), GPU
  /// UUID (matched to the node's inventory) and GPU index (used when the
  /// inventory has no UUIDs).
  std::string node_label = "Hostname";
  std::string uuid_label = "UUID";
  std::string gpu_label = "gpu";
  PrometheusQueries queries;
  /// How filter messages name the two utilisation windows.
  std::string utilization_window = "1m avg";
  std::string sustained_window = "5m avg";

  bool operator==(const PrometheusSettings&) const = default;
};

struct TelemetrySettings {
  absl::Duration refresh_interval = absl::Seconds(15);
  absl::Duration stale_after = absl::Minutes(3);
  bool node_annotations = true;
  std::optional<PrometheusSettings> prometheus;

  bool operator==(const TelemetrySettings&) const = default;
};

}  // namespace tessera
