// Keeps the cluster model's live GPU metrics current, in the background.
//
// Two sources feed it: Prometheus (queried every refresh interval on this
// refresher's own thread) and the `tessera.io/gpu-utilization` node
// annotation (handed in by whoever watches Node objects). Per node, the
// source with the newer sample wins. Each round it also drops measurements
// past their TTL, then writes what changed into the ClusterModel and
// publishes, so requests read telemetry from their snapshot and never wait
// for Prometheus.
//
// Failures (Prometheus unreachable, HTTP errors, malformed answers, NaN
// values) are logged when they start or change, counted in /metrics, and
// survived: the last good values stay in force until they go stale, and the
// next round tries again.
//
// Metrics:
//   tessera_telemetry_queries_total{query,result}     result: success, unreachable, http_error,
//                                                     prometheus_error, malformed
//   tessera_telemetry_samples_dropped_total{reason}   invalid_value, no_node, unknown_gpu, not_sampled
//   tessera_telemetry_refreshes_total{result}         success, failure
//   tessera_telemetry_refresh_duration_seconds        histogram
//   tessera_telemetry_last_success_timestamp_seconds  Unix time of the last good round
//   tessera_telemetry_nodes{source}                   nodes measured, by source (prometheus, annotation)
//   tessera_telemetry_gpus                            GPUs with a fresh measurement
//   tessera_telemetry_annotation_errors_total         unparsable tessera.io/gpu-utilization values
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/common/clock.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/model/telemetry.h"
#include "telemetry/gpu_samples.h"
#include "telemetry/prometheus_source.h"
#include "telemetry/telemetry_settings.h"

namespace tessera {

class TelemetryRefresher {
 public:
  /// kManual runs rounds only at RefreshNow() (tests, tools).
  enum class Mode { kBackground, kManual };

  /// \param model, \param metrics and \param clock must outlive the
  /// refresher. The clock gives the time that measurements age by and that
  /// the background thread waits on between rounds (tests drive it).
  TelemetryRefresher(ClusterModel& model, MetricsRegistry& metrics, Mode mode = Mode::kBackground,
                     const Clock& clock = Clock::Real());
  /// Stops the background thread (cancelling a query in flight).
  ~TelemetryRefresher();
  TelemetryRefresher(const TelemetryRefresher&) = delete;
  TelemetryRefresher& operator=(const TelemetryRefresher&) = delete;

  /// Applies the policy's `telemetry:` section (nullopt: none, which drops
  /// every measurement). Starts the background thread at the first section,
  /// reconfigures it at each change (cancelling a query in flight), and
  /// leaves it alone when nothing changed. Thread-safe.
  /// \return InvalidArgument when the Prometheus URL is unusable (the policy
  ///   loader has already refused such a file, so only programmatic callers see it).
  absl::Status Configure(std::optional<TelemetrySettings> settings);

  /// Runs one round now on the calling thread (rounds are serialised with
  /// the background thread's). Tests and tools use it; the service does not.
  /// \return OK when the Prometheus queries it needs succeeded (or there is
  ///   no Prometheus source), else the first failure.
  absl::Status RefreshNow();

  /// The node annotation source: node `node`'s `tessera.io/gpu-utilization`
  /// value (nullopt: the node has none). Applies to the model at once; the
  /// caller publishes, as with its other changes to the model (the next
  /// round publishes anyway). Ignored unless the settings enable annotations.
  void OnNodeAnnotation(const std::string& node, std::optional<std::string_view> annotation);

 private:
  struct NodeRecord {
    std::shared_ptr<const NodeTelemetry> prometheus;
    std::shared_ptr<const NodeTelemetry> annotation;
    std::shared_ptr<const NodeTelemetry> published;  // what the model has
    std::string annotation_error;                    // the last one logged
  };

  void Loop();
  // One round; holds round_mu_.
  absl::Status Round() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  // Writes `record`'s winner to the model if it changed; true if it did.
  bool Publish(const std::string& name, NodeRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  bool ShouldWake() const ABSL_SHARED_LOCKS_REQUIRED(config_mu_);
  void CountQueries(const PrometheusRound& round);
  // Logs each query that started or stopped failing; the first failure of the round.
  absl::Status LogQueryOutcomes(const PrometheusRound& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  // What a round's published nodes came from.
  struct Published {
    size_t from_prometheus = 0, from_annotation = 0, gpus = 0;
  };
  // Merges the round into the records, drops what went stale and publishes
  // the model if any node's winner changed.
  Published Apply(PrometheusRound& round, absl::Time now);

  ClusterModel& model_;
  MetricsRegistry& metrics_;
  const Mode mode_;
  const Clock& clock_;

  // Rounds run one at a time (the thread's and RefreshNow's).
  absl::Mutex round_mu_;

  // Configuration and the thread's control.
  absl::Mutex config_mu_;
  std::optional<TelemetrySettings> settings_ ABSL_GUARDED_BY(config_mu_);
  std::shared_ptr<PrometheusSource> source_ ABSL_GUARDED_BY(config_mu_);
  bool stopping_ ABSL_GUARDED_BY(config_mu_) = false;
  bool wake_ ABSL_GUARDED_BY(config_mu_) = false;
  std::thread thread_;  // started by the first Configure with settings

  // What each source says per node.
  absl::Mutex state_mu_;
  absl::flat_hash_map<std::string, NodeRecord> records_ ABSL_GUARDED_BY(state_mu_);

  // Logging state: the last failure logged per query, to log changes only.
  std::array<std::string, kGpuMetricCount> last_query_error_ ABSL_GUARDED_BY(round_mu_);

  Counter& refresh_ok_;
  Counter& refresh_failed_;
  Histogram& refresh_seconds_;
  Gauge& last_success_;
  Gauge& prometheus_nodes_;
  Gauge& annotation_nodes_;
  Gauge& fresh_gpus_;
  Counter& annotation_errors_;
};

}  // namespace tessera
