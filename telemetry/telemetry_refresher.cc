#include "telemetry/telemetry_refresher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "k8s/gpu_utilization.h"
#include "scheduler/common/log.h"
#include "scheduler/common/thread_name.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

using TelemetryPtr = std::shared_ptr<const NodeTelemetry>;

// `t` without the GPUs whose measurement went stale by `now`; null when none
// is left. The same pointer when nothing went stale (no copy).
TelemetryPtr DropStale(TelemetryPtr t, absl::Time now) {
  if (t == nullptr) return t;
  const auto stale = [&](const GpuTelemetry& g) { return !t->Fresh(g, now); };
  if (std::none_of(t->gpus.begin(), t->gpus.end(), stale)) return t;
  auto kept = std::make_shared<NodeTelemetry>(*t);
  kept->gpus.erase(std::remove_if(kept->gpus.begin(), kept->gpus.end(), stale), kept->gpus.end());
  if (kept->gpus.empty()) return nullptr;
  return kept;
}

// The new answer for a node, plus the GPUs of the previous one that this
// answer lacks but that are still fresh (one GPU's series can lag a scrape).
NodeTelemetry Merge(NodeTelemetry next, const NodeTelemetry* previous, absl::Time now) {
  if (previous == nullptr) return next;
  bool added = false;
  for (const GpuTelemetry& g : previous->gpus) {
    if (previous->Fresh(g, now) && next.Find(g.index) == nullptr) {
      next.gpus.push_back(g);
      added = true;
    }
  }
  if (added) {
    std::sort(next.gpus.begin(), next.gpus.end(),
              [](const GpuTelemetry& a, const GpuTelemetry& b) { return a.index < b.index; });
  }
  return next;
}

// The source in force for a node: the one measured last.
TelemetryPtr Winner(const TelemetryPtr& prometheus, const TelemetryPtr& annotation) {
  if (prometheus == nullptr) return annotation;
  if (annotation == nullptr) return prometheus;
  return annotation->newest_sample() > prometheus->newest_sample() ? annotation : prometheus;
}

double UnixSeconds(absl::Time t) { return absl::ToDoubleSeconds(t - absl::UnixEpoch()); }

}  // namespace

TelemetryRefresher::TelemetryRefresher(ClusterModel& model, MetricsRegistry& metrics, Mode mode, const Clock& clock)
    : model_(model),
      metrics_(metrics),
      mode_(mode),
      clock_(clock),
      refresh_ok_(metrics.Counter("tessera_telemetry_refreshes_total", "Telemetry refresh rounds by result.",
                                  {{"result", "success"}})),
      refresh_failed_(metrics.Counter("tessera_telemetry_refreshes_total", "Telemetry refresh rounds by result.",
                                      {{"result", "failure"}})),
      refresh_seconds_(metrics.Histogram("tessera_telemetry_refresh_duration_seconds",
                                         "Time of one telemetry refresh round (queries, parsing, publishing).", {},
                                         ExponentialBuckets(0.001, 2.5, 12))),
      last_success_(metrics.Gauge("tessera_telemetry_last_success_timestamp_seconds",
                                  "Unix time of the last refresh round whose Prometheus queries succeeded.")),
      prometheus_nodes_(metrics.Gauge("tessera_telemetry_nodes", "Nodes with live GPU metrics, by source.",
                                      {{"source", "prometheus"}})),
      annotation_nodes_(metrics.Gauge("tessera_telemetry_nodes", "Nodes with live GPU metrics, by source.",
                                      {{"source", "annotation"}})),
      fresh_gpus_(metrics.Gauge("tessera_telemetry_gpus", "GPUs with a fresh measurement.")),
      annotation_errors_(metrics.Counter("tessera_telemetry_annotation_errors_total",
                                         "Node annotations tessera.io/gpu-utilization that could not be parsed.")) {}

TelemetryRefresher::~TelemetryRefresher() {
  {
    absl::MutexLock lock(&config_mu_);
    stopping_ = true;
    if (source_ != nullptr) source_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status TelemetryRefresher::Configure(std::optional<TelemetrySettings> settings) {
  std::shared_ptr<PrometheusSource> source;
  if (settings.has_value() && settings->prometheus.has_value()) {
    absl::StatusOr<std::unique_ptr<PrometheusSource>> created =
        PrometheusSource::Create(*settings->prometheus, settings->stale_after);
    if (!created.ok()) return created.status();
    source = *std::move(created);
  }
  bool start = false, keep_prometheus = false, keep_annotations = false;
  {
    absl::MutexLock lock(&config_mu_);
    if (settings == settings_) return absl::OkStatus();
    if (source_ != nullptr) source_->Cancel();  // a round in flight ends now; the next uses `source`
    source_ = std::move(source);
    settings_ = std::move(settings);
    wake_ = true;
    start = mode_ == Mode::kBackground && settings_.has_value() && !thread_.joinable() && !stopping_;
    if (start) {
      thread_ = std::thread([this] {
        NameThisThread("telemetry");
        Loop();
      });
    }
    keep_prometheus = source_ != nullptr;
    keep_annotations = settings_.has_value() && settings_->node_annotations;
  }
  if (start) LogInfo("telemetry: refreshing live GPU metrics in the background");

  // A source switched off takes its measurements with it.
  bool changed = false;
  {
    absl::MutexLock lock(&state_mu_);
    for (auto it = records_.begin(); it != records_.end();) {
      NodeRecord& record = it->second;
      if (!keep_prometheus) record.prometheus = nullptr;
      if (!keep_annotations) {
        record.annotation = nullptr;
        record.annotation_error.clear();
      }
      changed |= Publish(it->first, record);
      if (record.published == nullptr && record.annotation_error.empty()) {
        records_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  if (changed) model_.Publish();
  return absl::OkStatus();
}

bool TelemetryRefresher::ShouldWake() const { return stopping_ || wake_; }

void TelemetryRefresher::Loop() {
  config_mu_.Lock();
  while (!stopping_) {
    const absl::Duration interval =
        settings_.has_value() ? settings_->refresh_interval : absl::InfiniteDuration();  // none: wait for one
    wake_ = false;
    config_mu_.Unlock();
    {
      absl::MutexLock round(&round_mu_);
      Round().IgnoreError();  // logged and counted inside
    }
    config_mu_.Lock();
    clock_.AwaitWithTimeout(config_mu_, absl::Condition(this, &TelemetryRefresher::ShouldWake), interval);
  }
  config_mu_.Unlock();
}

absl::Status TelemetryRefresher::RefreshNow() {
  absl::MutexLock round(&round_mu_);
  return Round();
}

void TelemetryRefresher::CountQueries(const PrometheusRound& round) {
  for (const QueryOutcome& q : round.queries) {
    metrics_
        .Counter("tessera_telemetry_queries_total", "Prometheus queries by query and result.",
                 {{"query", std::string(GpuMetricName(q.metric))}, {"result", std::string(QueryResultName(q.result))}})
        .Inc();
  }
  const std::pair<std::string_view, size_t> dropped[] = {{"invalid_value", round.dropped.invalid_value},
                                                         {"no_node", round.dropped.no_node},
                                                         {"unknown_gpu", round.dropped.unknown_gpu},
                                                         {"not_sampled", round.dropped.not_sampled}};
  for (const auto& [reason, count] : dropped) {
    metrics_
        .Counter("tessera_telemetry_samples_dropped_total",
                 "Prometheus samples or GPUs left out of a refresh, by reason.", {{"reason", std::string(reason)}})
        .Inc(static_cast<double>(count));
  }
}

absl::Status TelemetryRefresher::Round() {
  const absl::Time started = clock_.Now();
  std::shared_ptr<PrometheusSource> source;
  {
    absl::MutexLock lock(&config_mu_);
    source = source_;
  }
  absl::Status status;
  PrometheusRound round;
  if (source != nullptr) {
    const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
    round = source->Fetch(snapshot.get());
    CountQueries(round);
    status = LogQueryOutcomes(round);
  }
  const absl::Time now = clock_.Now();
  const Published published = Apply(round, now);
  prometheus_nodes_.Set(static_cast<double>(published.from_prometheus));
  annotation_nodes_.Set(static_cast<double>(published.from_annotation));
  fresh_gpus_.Set(static_cast<double>(published.gpus));
  if (source != nullptr) {
    if (round.usable()) {
      refresh_ok_.Inc();
      last_success_.Set(UnixSeconds(now));
    } else {
      refresh_failed_.Inc();
    }
  }
  refresh_seconds_.Observe(absl::ToDoubleSeconds(clock_.Now() - started));
  return status;
}

absl::Status TelemetryRefresher::LogQueryOutcomes(const PrometheusRound& round) {
  absl::Status first_failure;
  for (const QueryOutcome& q : round.queries) {
    std::string& last = last_query_error_[static_cast<size_t>(q.metric)];
    if (q.result == QueryResult::kSuccess) {
      if (!last.empty()) LogInfo(absl::StrCat("telemetry: query ", Absl(GpuMetricName(q.metric)), " works again"));
      last.clear();
      continue;
    }
    if (first_failure.ok()) first_failure = q.status;
    if (q.status.message() != last) {
      LogWarning(absl::StrCat("telemetry: ", q.status.message(), " (the last good values stay in force until ",
                              "they go stale)"));
      last = std::string(q.status.message());
    }
  }
  return first_failure;
}

TelemetryRefresher::Published TelemetryRefresher::Apply(PrometheusRound& round, absl::Time now) {
  Published published;
  bool changed = false;
  {
    absl::MutexLock lock(&state_mu_);
    for (auto& [name, telemetry] : round.nodes) {
      NodeRecord& record = records_[name];
      record.prometheus = std::make_shared<const NodeTelemetry>(Merge(std::move(telemetry), record.prometheus.get(), now));
    }
    std::vector<std::string> emptied;
    for (auto& [name, record] : records_) {
      record.prometheus = DropStale(std::move(record.prometheus), now);
      record.annotation = DropStale(std::move(record.annotation), now);
      changed |= Publish(name, record);
      if (record.published == nullptr) {
        if (record.annotation_error.empty()) emptied.push_back(name);
        continue;
      }
      (record.published->source == TelemetrySource::kPrometheus ? published.from_prometheus
                                                                 : published.from_annotation)++;
      published.gpus += record.published->gpus.size();
    }
    for (const std::string& name : emptied) records_.erase(name);
  }
  if (changed) model_.Publish();
  return published;
}

bool TelemetryRefresher::Publish(const std::string& name, NodeRecord& record) {
  TelemetryPtr winner = Winner(record.prometheus, record.annotation);
  if (winner == record.published) return false;
  record.published = winner;
  model_.SetNodeTelemetry(name, std::move(winner));
  return true;
}

void TelemetryRefresher::OnNodeAnnotation(const std::string& node, std::optional<std::string_view> annotation) {
  absl::Duration stale_after;
  {
    absl::MutexLock lock(&config_mu_);
    if (!settings_.has_value() || !settings_->node_annotations) return;
    stale_after = settings_->stale_after;
  }
  const absl::Time now = clock_.Now();
  TelemetryPtr parsed;
  std::string error;
  if (annotation.has_value()) {
    absl::StatusOr<NodeTelemetry> t = k8s::ParseGpuUtilization(*annotation, stale_after);
    if (t.ok()) {
      // A node clock ahead of ours must not make a measurement look newer
      // than it can be, nor keep it fresh for longer than the TTL.
      for (GpuTelemetry& g : t->gpus) {
        g.sampled_at = std::min(g.sampled_at, now);
      }
      parsed = DropStale(std::make_shared<const NodeTelemetry>(*std::move(t)), now);
    } else {
      error = std::string(t.status().message());
      annotation_errors_.Inc();
    }
  }
  absl::MutexLock lock(&state_mu_);
  NodeRecord& record = records_[node];
  if (!error.empty() && error != record.annotation_error) {
    LogWarning(absl::StrCat("telemetry: node ", node, ": ", error));
  }
  record.annotation_error = std::move(error);
  record.annotation = std::move(parsed);
  Publish(node, record);
}

}  // namespace tessera
