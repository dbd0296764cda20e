// One round of Prometheus queries (utilisation, sustained utilisation, SM
// activity, memory used and free, sample time), joined into telemetry per node.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "absl/status/status.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/model/telemetry.h"
#include "telemetry/gpu_samples.h"
#include "telemetry/prometheus_client.h"
#include "telemetry/telemetry_settings.h"

namespace tessera {

/// How a query ended, as counted in /metrics.
enum class QueryResult { kSuccess, kUnreachable, kHttpError, kPrometheusError, kMalformed };

/// "success", "unreachable", "http_error", "prometheus_error", "malformed".
std::string_view QueryResultName(QueryResult result);

struct QueryOutcome {
  GpuMetric metric;
  QueryResult result = QueryResult::kSuccess;
  absl::Status status = absl::OkStatus();  ///< Why, when not kSuccess.
};

struct PrometheusRound {
  std::vector<std::pair<std::string, NodeTelemetry>> nodes;
  std::vector<QueryOutcome> queries;  ///< One per query run, in run order.
  DroppedSamples dropped;
  /// Whether the utilization and sample-time queries succeeded; without
  /// them nothing is refreshed (`nodes` is empty).
  [[nodiscard]] bool usable() const {
    for (const QueryOutcome& q : queries) {
      if (q.result != QueryResult::kSuccess &&
          (q.metric == GpuMetric::kUtilization || q.metric == GpuMetric::kSampleTime)) {
        return false;
      }
    }
    return !queries.empty();
  }
};

class PrometheusSource {
 public:
  /// \param settings validated (the policy loader checked the URL).
  /// \return InvalidArgument for an unusable URL.
  static absl::StatusOr<std::unique_ptr<PrometheusSource>> Create(PrometheusSettings settings,
                                                                    absl::Duration stale_after);

  /// Runs every configured query, utilization and sample time first (when
  /// either fails, the rest are skipped). `snapshot` (may be null) maps GPU UUIDs to indices.
  PrometheusRound Fetch(const ClusterSnapshot* snapshot);

  /// The PromQL sent for `promql`: `max by (<node>, <uuid>, <gpu>) (<promql>)`.
  /// Prometheus then returns only the labels Tessera matches on (the DCGM
  /// exporter's series carry a dozen more: the answer shrinks ~3x), and two
  /// series of one GPU (a duplicate scrape job) collapse into one.
  [[nodiscard]] static std::string MatchedQuery(const PrometheusSettings& settings, std::string_view promql);

  /// Parses one answer body into `table` (exposed for the benchmark).
  absl::Status Parse(GpuMetric metric, std::string_view body, GpuSampleTable& table);

  /// Aborts a Fetch in flight and all later ones. Thread-safe.
  void Cancel() { client_.Cancel(); }

  [[nodiscard]] const PrometheusSettings& settings() const { return settings_; }

 private:
  PrometheusSource(PrometheusSettings settings, PrometheusEndpoint endpoint, absl::Duration stale_after);

  const PrometheusSettings settings_;
  const absl::Duration stale_after_;
  PrometheusClient client_;
  simdjson::dom::parser parser_;  // reused: keeps its buffers between rounds
};

}  // namespace tessera
