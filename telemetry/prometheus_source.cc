#include "telemetry/prometheus_source.h"

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

constexpr size_t kMaxQuotedBody = 200;

const std::string& QueryOf(const PrometheusQueries& q, GpuMetric metric) {
  switch (metric) {
    case GpuMetric::kUtilization: return q.utilization;
    case GpuMetric::kSustainedUtilization: return q.sustained_utilization;
    case GpuMetric::kSmActive: return q.sm_active;
    case GpuMetric::kMemoryUsed: return q.memory_used;
    case GpuMetric::kMemoryFree: return q.memory_free;
    case GpuMetric::kSampleTime: return q.sample_time;
  }
  return q.utilization;
}

QueryResult Classify(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition: return QueryResult::kPrometheusError;
    case absl::StatusCode::kInvalidArgument: return QueryResult::kMalformed;
    default: return QueryResult::kUnreachable;
  }
}

}  // namespace

std::string_view QueryResultName(QueryResult result) {
  switch (result) {
    case QueryResult::kSuccess: return "success";
    case QueryResult::kUnreachable: return "unreachable";
    case QueryResult::kHttpError: return "http_error";
    case QueryResult::kPrometheusError: return "prometheus_error";
    case QueryResult::kMalformed: return "malformed";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<PrometheusSource>> PrometheusSource::Create(PrometheusSettings settings,
                                                                           absl::Duration stale_after) {
  absl::StatusOr<PrometheusEndpoint> endpoint = ParsePrometheusUrl(settings.url);
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Prometheus URL \"", settings.url, "\" ", endpoint.status().message()));
  }
  return std::unique_ptr<PrometheusSource>(new PrometheusSource(std::move(settings), *std::move(endpoint), stale_after));
}

PrometheusSource::PrometheusSource(PrometheusSettings settings, PrometheusEndpoint endpoint,
                                   absl::Duration stale_after)
    : settings_(std::move(settings)),
      stale_after_(stale_after),
      client_(std::move(endpoint), settings_.timeout) {}

std::string PrometheusSource::MatchedQuery(const PrometheusSettings& settings, std::string_view promql) {
  return absl::StrCat("max by (", settings.node_label, ", ", settings.uuid_label, ", ", settings.gpu_label, ") (",
                      Absl(promql), ")");
}

absl::Status PrometheusSource::Parse(GpuMetric metric, std::string_view body, GpuSampleTable& table) {
  const SeriesLabels labels{settings_.node_label, settings_.uuid_label, settings_.gpu_label};
  return ParseInstantVector(body, labels, parser_, [&](const VectorSample& s) { table.Add(metric, s); });
}

PrometheusRound PrometheusSource::Fetch(const ClusterSnapshot* snapshot) {
  PrometheusRound round;
  GpuSampleTable table;
  // The two queries a round cannot do without come first: the rest are not
  // run when either fails.
  for (GpuMetric metric : {GpuMetric::kUtilization, GpuMetric::kSampleTime, GpuMetric::kSustainedUtilization,
                           GpuMetric::kSmActive, GpuMetric::kMemoryUsed, GpuMetric::kMemoryFree}) {
    const std::string& promql = QueryOf(settings_.queries, metric);
    if (promql.empty()) continue;
    QueryOutcome& outcome = round.queries.emplace_back(QueryOutcome{.metric = metric});
    auto fail = [&](QueryResult result, absl::Status status) {
      outcome.result = result;
      outcome.status = absl::Status(status.code(), absl::StrCat("query ", Absl(GpuMetricName(metric)), " (", promql,
                                                                "): ", status.message()));
    };
    absl::StatusOr<PrometheusAnswer> answer = client_.Query(MatchedQuery(settings_, promql));
    if (!answer.ok()) {
      fail(QueryResult::kUnreachable, answer.status());
    } else if (absl::Status parsed = Parse(metric, answer->body, table); answer->status != 200) {
      // Prometheus explains its errors in a JSON body (400 bad_data, 422, 503);
      // anything else in front of it (a proxy) answers what it likes.
      if (parsed.code() == absl::StatusCode::kFailedPrecondition) {
        fail(QueryResult::kPrometheusError,
             absl::Status(parsed.code(), absl::StrCat("HTTP ", answer->status, ": ", parsed.message())));
      } else {
        const std::string_view body = std::string_view(answer->body).substr(0, kMaxQuotedBody);
        fail(QueryResult::kHttpError,
             absl::UnavailableError(absl::StrCat("HTTP ", answer->status, ": ", Absl(body))));
      }
    } else if (!parsed.ok()) {
      fail(Classify(parsed), parsed);
    }
    if (outcome.result != QueryResult::kSuccess &&
        (metric == GpuMetric::kUtilization || metric == GpuMetric::kSampleTime)) {
      return round;  // not usable(): nothing is refreshed
    }
  }
  const GpuSampleTable::Options options{.stale_after = stale_after_,
                                        .has_sample_time = !settings_.queries.sample_time.empty(),
                                        .utilization_window = settings_.utilization_window,
                                        .sustained_window = settings_.sustained_window};
  round.nodes = table.Build(snapshot, options);
  round.dropped = table.dropped();
  return round;
}

}  // namespace tessera
